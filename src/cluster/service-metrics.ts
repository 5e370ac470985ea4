import type { Worker } from 'node:cluster';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { isSeriesReply, type SeriesRequest } from './messages.js';

type Series = MetricObjectWithValues<MetricValue<string>>[];

/** A worker that has not answered by then is counted with its last answer. */
const GATHER_TIMEOUT_MS = 5000;

/**
 * The whole service's series for GET /metrics under `--workers`: every worker's registry, summed.
 *
 * A worker that dies takes its counters with it, and the sum would drop: Prometheus reads a drop as
 * a reset to zero, so `rate()` and `increase()` would jump by everything the other workers had
 * counted. The primary keeps each worker's last answer, and folds the counters and histograms of a
 * worker that exits into a retired share that every later sum includes. Counts made after its
 * last gathering are lost with it (a plateau, never a drop). Gauges leave with their worker.
 */
export class ServiceMetrics {
  /** Each live worker's last answer. A worker's series are here or in #retired, never in both. */
  readonly #last = new Map<number, Series>();
  readonly #gone = new Set<number>();
  #retired: Series = [];
  #next = 0;

  /**
   * Asks each live worker for its series, then sums the live workers' latest answers with the
   * retired share. Summed from that state, not from the answers: a worker that answers and then
   * exits while a slower one is awaited has moved into the retired share, and must not count twice.
   */
  async gather(workers: Iterable<Worker>): Promise<string> {
    await Promise.all([...workers].map((worker) => this.#ask(worker)));
    const registry = AggregatorRegistry.aggregate([...this.#last.values(), this.#retired]);
    return registry.metrics();
  }

  /** A worker exited: what it had counted by its last answer stays in the service's sums. */
  retire(workerId: number): void {
    this.#gone.add(workerId);
    const last = this.#last.get(workerId);
    this.#last.delete(workerId);
    if (last === undefined) return;
    const kept = last.filter(isCumulative);
    if (kept.length === 0) return;
    // aggregate() sums synchronously; each of its metrics hands back the plain summed object.
    this.#retired = AggregatorRegistry.aggregate([this.#retired, kept])
      .getMetricsAsArray()
      .map((metric) => (metric as unknown as { get(): Series[number] }).get());
  }

  /** Resolves once the worker answered (its answer kept) or after GATHER_TIMEOUT_MS (the last kept). */
  #ask(worker: Worker): Promise<void> {
    if (!worker.isConnected()) return Promise.resolve();
    const id = this.#next++;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        resolve();
      };
      const onMessage = (message: unknown): void => {
        if (!isSeriesReply(message) || message.id !== id) return;
        // An answer read after its worker's exit is already in the retired share.
        if (!this.#gone.has(worker.id)) this.#last.set(worker.id, message.series as Series);
        done();
      };
      const timer = setTimeout(done, GATHER_TIMEOUT_MS);
      worker.on('message', onMessage);
      const request: SeriesRequest = { type: 'tokenproxy:series', id };
      worker.send(request);
    });
  }
}

/** Counters and histograms that prom-client sums across workers: what a worker's exit must not undo. */
function isCumulative(metric: Series[number]): boolean {
  const aggregator = (metric as { aggregator?: string }).aggregator ?? 'sum';
  // prom-client's typings declare a numeric enum here; at run time the JSON carries these strings.
  const type = metric.type as unknown as string;
  return aggregator === 'sum' && (type === 'counter' || type === 'histogram');
}
