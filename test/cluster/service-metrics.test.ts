import { EventEmitter } from 'node:events';
import type { Worker } from 'node:cluster';
import { describe, expect, it } from 'vitest';
import { ServiceMetrics } from '../../src/cluster/service-metrics.js';

/** A fake cluster worker answering the series request with a counter of `value`, after `delayMs`. */
function fakeWorker(id: number, value: () => number, delayMs: number): Worker {
  const w = new EventEmitter() as EventEmitter & Partial<Worker>;
  Object.assign(w, {
    id,
    isConnected: () => true,
    send: (msg: { id: number }) => {
      setTimeout(() => {
        w.emit('message', {
          type: 'tokenproxy:series-reply',
          id: msg.id,
          series: [
            {
              name: 'tokenproxy_proxy_requests_total',
              help: 'h',
              type: 'counter',
              aggregator: 'sum',
              values: [{ value: value(), labels: {} }],
            },
          ],
        });
      }, delayMs);
      return true;
    },
  });
  return w as unknown as Worker;
}

const total = (text: string) => Number(/^tokenproxy_proxy_requests_total (\d+)/m.exec(text)?.[1]);

/**
 * The primary's sums for /metrics under --workers (src/cluster/service-metrics.ts), with workers
 * that answer over an EventEmitter as node:cluster's do: counters never go down when one exits.
 */
describe('ServiceMetrics', () => {
  it("keeps an exited worker's counts in the sums", async () => {
    const m = new ServiceMetrics();
    const a = fakeWorker(1, () => 6, 0);
    const b = fakeWorker(2, () => 4, 0);
    expect(total(await m.gather([a, b]))).toBe(10);
    m.retire(1);
    const replacement = fakeWorker(3, () => 1, 0);
    expect(total(await m.gather([b, replacement]))).toBe(11);
  });

  it('a worker that does not answer in time is counted with its last answer', async () => {
    const m = new ServiceMetrics();
    let silent = false;
    const w = fakeWorker(1, () => 7, 0);
    const send = w.send.bind(w);
    Object.assign(w, { send: (msg: { id: number }) => (silent ? true : send(msg as never)) });
    expect(total(await m.gather([w]))).toBe(7);
    silent = true;
    expect(total(await m.gather([w]))).toBe(7);
  }, 10_000);

  it('never counts a worker that exits during a gathering twice, so the sum never goes down afterwards', async () => {
    const m = new ServiceMetrics();
    const fast = fakeWorker(1, () => 6, 0);
    const slow = fakeWorker(2, () => 4, 50);
    expect(total(await m.gather([fast, slow]))).toBe(10);
    // A scrape is in flight; the fast worker answers at once, then dies before the slow one answers.
    const pending = m.gather([fast, slow]);
    await new Promise((r) => setTimeout(r, 10));
    m.retire(1);
    const during = total(await pending);
    const after = total(await m.gather([slow]));
    expect(during).toBe(10);
    expect(after).toBeGreaterThanOrEqual(during);
  });
});
