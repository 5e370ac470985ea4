import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { Usage } from '../api';

/** Forwarded and refused requests per hour as bars, drawn by uPlot (canvas, no inline script or HTML). */
export function UsageChart(props: { usage: Usage }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (el === null) return;
    const xs = props.usage.buckets.map((b) => Date.parse(b.start) / 1000);
    const forwarded = props.usage.buckets.map((b) => b.forwarded);
    const refused = props.usage.buckets.map((b) => b.refused);
    // Refused bars are narrower and drawn over the forwarded ones, so both stay visible.
    const bars = uPlot.paths.bars?.({ size: [0.7, 40], align: 1 });
    const narrow = uPlot.paths.bars?.({ size: [0.35, 20], align: 1 });
    // Each bar starts at its hour and covers it: the axis runs to the end of the last hour.
    const first = xs[0] ?? 0;
    const last = (xs[xs.length - 1] ?? first) + 3600;
    const width = () => Math.max(260, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        scales: {
          x: { time: true, range: () => [first, last] },
          y: { range: (_u, _min, max) => [0, Math.max(4, max * 1.15)] },
        },
        axes: [
          { stroke: '#64748b', grid: { stroke: '#eef2f7' }, ticks: { stroke: '#e2e8f0' } },
          { stroke: '#64748b', grid: { stroke: '#eef2f7' }, ticks: { stroke: '#e2e8f0' }, size: 48 },
        ],
        series: [
          {},
          {
            label: 'Forwarded',
            stroke: '#2563eb',
            fill: 'rgba(37,99,235,0.75)',
            width: 0,
            paths: bars,
            points: { show: false },
          },
          {
            label: 'Refused',
            stroke: '#dc2626',
            fill: 'rgba(220,38,38,0.85)',
            width: 0,
            paths: narrow,
            points: { show: false },
          },
        ],
      },
      [xs, forwarded, refused],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [props.usage]);
  return (
    <div
      ref={box}
      class="chart"
      role="img"
      aria-label="Forwarded and refused requests per hour, last 24 hours"
    />
  );
}
