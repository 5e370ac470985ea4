import { createLogger } from '../../src/observability/logger.js';
import type { DropReason } from '../../src/requestlog/batcher.js';
import { Handover } from '../../src/requestlog/handover.js';
import { LOG_BUDGETS } from '../../src/requestlog/log-budgets.js';
import type { LogQueue } from '../../src/requestlog/log-protocol.js';
import type { RequestLogRecord } from '../../src/requestlog/record.js';
import { requestLogEntry } from '../store/helpers.js';

/** A request-log record as the proxy hands it over, with a fresh request id. */
export function record(overrides: Partial<RequestLogRecord> = {}): RequestLogRecord {
  const { id, ...entry } = requestLogEntry({ timestamp: '2026-03-10T12:00:00.000Z' });
  return { requestId: id, ...entry, forwarded: false, ...overrides };
}

/** A real logger (debug level) whose JSON lines are kept for assertions. */
export function capture() {
  const lines: string[] = [];
  const logger = createLogger('debug', { write: (line: string) => void lines.push(line) });
  const entries = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { logger, lines, entries };
}

export const KB = 1024;

/** A record no token matched, with a long path: what anyone can send at line rate. */
export const junk = (path = `/openai/${'a'.repeat(15_000)}`) =>
  record({ accountId: null, tokenId: null, status: 401, authorized: false, path });

/** A Handover with the given budgets, and what it reported dropped, by queue and reason. */
export function handover(budgets: Partial<typeof LOG_BUDGETS> = {}) {
  const drops: { queue: LogQueue; count: number; reason: DropReason }[] = [];
  const h = new Handover({ ...LOG_BUDGETS, ...budgets }, (queue, count, reason) => {
    if (count > 0) drops.push({ queue, count, reason });
  });
  const dropped = (queue: LogQueue, reason?: DropReason) =>
    drops
      .filter((d) => d.queue === queue && (reason === undefined || d.reason === reason))
      .reduce((sum, d) => sum + d.count, 0);
  return { h, drops, dropped };
}
