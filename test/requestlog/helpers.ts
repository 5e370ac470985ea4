import { createLogger } from '../../src/observability/logger.js';
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
