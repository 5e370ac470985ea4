import type { IncomingHttpHeaders } from 'node:http';

export interface ReceivedRequest {
  method: string;
  /** Request target as received: path plus query string. */
  path: string;
  /** Node's parsed headers: lower-case names, duplicates merged (or arrays for `set-cookie`). */
  headers: IncomingHttpHeaders;
  /** Flat `[name, value, name, value, …]` list exactly as on the wire, so duplicates stay visible. */
  rawHeaders: string[];
  body: Buffer;
  /** `Date.now()` when the request head arrived. */
  receivedAt: number;
}

export interface RequestLog {
  /** Emptied in place by `reset()`, so references to it stay valid. */
  readonly received: ReceivedRequest[];
  add(record: ReceivedRequest): void;
  reset(): void;
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
}

export function createRequestLog(): RequestLog {
  const received: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  return {
    received,
    add(record) {
      received.push(record);
      for (const wake of [...waiters]) wake();
    },
    reset() {
      received.length = 0;
    },
    waitForRequests(count: number, timeoutMs = 5000): Promise<ReceivedRequest[]> {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (received.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(received.slice());
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`mock provider: waited ${timeoutMs} ms for ${count} requests, got ${received.length}`),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}
