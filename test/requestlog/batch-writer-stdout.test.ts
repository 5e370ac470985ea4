import { describe, expect, it, vi } from 'vitest';
import { createRequestLogWriter } from '../../src/requestlog/batch-writer.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { databases } from '../support/databases.js';
import { SPEC_LOG_FIELDS } from '../store/helpers.js';
import { store, useDatabase } from '../store/store-suite.js';
import { instrumented, tokenOf } from './batch-writer-helpers.js';
import { capture, record } from './helpers.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`request-log writer on ${fixture.name}`, () => {
    useDatabase(fixture);

    it('prints each record as one log line: level, time, service, the record fields, msg (--log-requests)', async () => {
      const token = await tokenOf();
      const probe = instrumented(store);
      let down = true;
      probe.failWith(() => (down ? new StoreUnavailableError('down') : undefined));
      const printed: string[] = [];
      const writer = createRequestLogWriter({
        store: probe.store,
        logger: capture().logger,
        flushIntervalMs: 5,
        stdout: (line) => void printed.push(line),
      });
      const records = [
        record({ accountId: token.accountId, tokenId: token.id, forwarded: true, latencyMs: 0.6 }),
        record({ status: 401, authorized: false, origin: null, country: null, errorCode: 'invalid_token' }),
      ];
      for (const r of records) writer.write(r);
      // Lines do not wait for the database.
      await vi.waitFor(() => expect(printed).toHaveLength(2), { timeout: 5000 });
      down = false;
      await writer.flush();
      expect(printed.every((line) => line.endsWith('\n') && !line.slice(0, -1).includes('\n'))).toBe(true);
      const parsed = printed.map((line) => JSON.parse(line) as Record<string, unknown>);
      // The shape of every other log line: a capture of the server's own logger shows the same keys.
      const other = capture();
      other.logger.info({ request_id: 'x' }, 'request');
      const reference = other.entries()[0] as Record<string, unknown>;
      for (const line of parsed) {
        expect(Object.keys(line).slice(0, 3)).toEqual(Object.keys(reference).slice(0, 3));
        expect(Object.keys(line).at(-1)).toBe('msg');
        expect(Object.keys(line).sort()).toEqual(
          [
            ...SPEC_LOG_FIELDS,
            'request_id',
            'error_code',
            'model',
            'input_tokens',
            'output_tokens',
            'cost_micros',
            'level',
            'time',
            'service',
            'msg',
          ].sort(),
        );
        expect(Date.parse(line.time as string)).not.toBeNaN();
      }
      expect(parsed).toEqual([
        {
          level: 'info',
          time: expect.any(String) as string,
          service: 'tokenproxy',
          msg: 'request',
          error_code: null,
          request_id: records[0]?.requestId,
          timestamp: '2026-03-10T12:00:00.000Z',
          token_id: token.id,
          origin: 'https://app.example',
          ip: '203.0.113.7',
          country: 'DE',
          pop: 'fra1',
          path: '/openai/v1/chat/completions',
          status: 200,
          authorized: true,
          latency_ms: 1,
          model: null,
          input_tokens: null,
          output_tokens: null,
          cost_micros: null,
        },
        {
          request_id: records[1]?.requestId,
          timestamp: '2026-03-10T12:00:00.000Z',
          token_id: null,
          origin: null,
          ip: '203.0.113.7',
          country: null,
          pop: 'fra1',
          path: '/openai/v1/chat/completions',
          status: 401,
          authorized: false,
          latency_ms: 1,
          model: null,
          input_tokens: null,
          output_tokens: null,
          cost_micros: null,
          level: 'info',
          time: expect.any(String) as string,
          service: 'tokenproxy',
          msg: 'request',
          error_code: 'invalid_token',
        },
      ]);
      expect(printed).toHaveLength(2);
      await writer.close();
    });
  });
}
