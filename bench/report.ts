/** Formatting of the bench's table and JSON figures. */
import { pairedRatios, round, type Percentiles } from './stats.js';

export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(3);
}

export function ppp(p: { p50: number; p90: number; p99: number }): string {
  return `${fmt(p.p50)} / ${fmt(p.p90)} / ${fmt(p.p99)}`;
}

/** "(rounds 0.26–0.36)": the spread of the per-round ratios, so a reader sees how far one run moves. */
export function ratioRange(a: readonly number[], b: readonly number[]): string {
  const ratios = pairedRatios(a, b);
  if (ratios.length < 2) return '';
  return `(rounds ${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))})`;
}

export function roundP(p: Percentiles | { p50: number; p90: number; p99: number }): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(p)) out[k] = round(v as number, 4);
  return out;
}

export function printTable(rows: readonly string[][]): void {
  const widths: number[] = [];
  for (const row of rows) row.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  for (const [i, row] of rows.entries()) {
    process.stdout.write(
      `${row
        .map((c, j) => c.padEnd(widths[j] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
    if (i === 0) process.stdout.write(`${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
  }
}
