/**
 * Runs a job in one process at a time across every process sharing the store. The default lets
 * every caller run: retention is safe to run twice at once (each batch deletes rows that are still
 * there), only wasteful. A cross-process lock (a store-backed job lock) plugs in here.
 */
export interface ExclusiveRunner {
  /** Runs `job` unless another process holds `name`; resolves with undefined when it did not run. */
  run<T>(name: string, job: () => Promise<T>): Promise<T | undefined>;
}

export const runEverywhere: ExclusiveRunner = {
  run: (_name, job) => job(),
};
