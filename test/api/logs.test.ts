import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestLogJson as LogJson } from '../../src/requestlog/json.js';
import type { RequestLogEntry } from '../../src/store/records.js';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import { SPEC_LOG_FIELDS, anomalyEntry, requestLogEntry as logEntry } from '../store/helpers.js';
import {
  UNKNOWN_TOKEN_ID,
  createToken,
  expectError,
  newClient,
  ok,
  type Client,
  type CreatedTokenJson,
  type ListJson,
} from './helpers.js';

interface AnomalyJson {
  anomaly_id: string;
  timestamp: string;
  token_id: string;
  origin: string | null;
  ip: string;
  country: string | null;
  path: string;
  reason: string;
  kind: string;
  details: Record<string, unknown> | null;
}

const LOG_FIELDS = [
  ...SPEC_LOG_FIELDS,
  'request_id',
  'error_code',
  'model',
  'input_tokens',
  'output_tokens',
  'cost_micros',
].sort();

const ANOMALY_FIELDS = [
  'anomaly_id',
  'timestamp',
  'token_id',
  'origin',
  'ip',
  'country',
  'path',
  'reason',
  'kind',
  'details',
].sort();

/** A timestamp `i` seconds into the day, so records order predictably. */
const ts = (i: number): string => new Date(Date.UTC(2026, 5, 1, 0, 0, i)).toISOString();

/** Every page of a list, following next_cursor. */
async function walk<T>(c: Client, url: string, limit: number): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const sep = url.includes('?') ? '&' : '?';
    const res = await c.request(
      'GET',
      `${url}${sep}limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`,
    );
    const page = ok<ListJson<T>>(res);
    expect(page.data.length).toBeLessThanOrEqual(limit);
    items.push(...page.data);
    if (!page.has_more) {
      expect(page.next_cursor).toBeNull();
      return items;
    }
    expect(page.next_cursor).toBeTypeOf('string');
    cursor = page.next_cursor;
  }
  throw new Error('pagination did not end');
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`request and anomaly logs API (${fixture.name})`, () => {
    let h: ApiHarness;

    beforeAll(async () => {
      h = await startApiHarness(fixture);
    });
    afterAll(async () => {
      await h.close();
    });

    async function seeded(): Promise<{
      c: Client;
      a: CreatedTokenJson;
      b: CreatedTokenJson;
      logs: RequestLogEntry[];
    }> {
      const c = await newClient(h);
      const a = await createToken(c);
      const b = await createToken(c, { name: 'second' });
      const mine = { accountId: c.accountId };
      const logs = [
        logEntry({ ...mine, tokenId: a.token_id, timestamp: ts(1) }),
        logEntry({
          ...mine,
          tokenId: a.token_id,
          timestamp: ts(2),
          status: 403,
          authorized: false,
          origin: null,
          errorCode: 'origin_not_allowed',
        }),
        logEntry({ ...mine, tokenId: b.token_id, timestamp: ts(3), country: null, latencyMs: 0 }),
        logEntry({ ...mine, tokenId: b.token_id, timestamp: ts(4), status: 403, authorized: false }),
        logEntry({ ...mine, tokenId: a.token_id, timestamp: ts(5), status: 502 }),
      ];
      await h.store.requestLogs.insertMany(logs);
      return { c, a, b, logs };
    }

    const idsOf = (page: ListJson<LogJson>): string[] => page.data.map((item) => item.request_id);

    describe('GET /v1/logs', () => {
      it('lists the account records newest first, with exactly the specification fields', async () => {
        const { c, a, logs } = await seeded();
        // Records of other accounts and of no account never show.
        const other = await newClient(h);
        await h.store.requestLogs.insertMany([
          logEntry({ accountId: other.accountId, timestamp: ts(9) }),
          logEntry({ status: 401, authorized: false, timestamp: ts(9) }),
        ]);
        const page = ok<ListJson<LogJson>>(await c.request('GET', '/v1/logs'));
        expect(page.object).toBe('list');
        expect(page.has_more).toBe(false);
        expect(page.next_cursor).toBeNull();
        expect(idsOf(page)).toEqual([...logs].reverse().map((entry) => entry.id));
        for (const item of page.data) expect(Object.keys(item).sort()).toEqual(LOG_FIELDS);
        expect(page.data.at(-1)).toEqual({
          request_id: logs[0]?.id,
          timestamp: ts(1),
          token_id: a.token_id,
          origin: 'https://app.example',
          ip: '203.0.113.7',
          country: 'DE',
          pop: 'fra1',
          path: '/openai/v1/chat/completions',
          status: 200,
          authorized: true,
          latency_ms: 1,
          error_code: null,
          model: null,
          input_tokens: null,
          output_tokens: null,
          cost_micros: null,
        });
        expect(page.data.at(-2)).toMatchObject({
          status: 403,
          authorized: false,
          origin: null,
          error_code: 'origin_not_allowed',
        });
      });

      it('filters by token_id and authorized', async () => {
        const { c, a, b, logs } = await seeded();
        const ids = async (query: string) =>
          idsOf(ok<ListJson<LogJson>>(await c.request('GET', `/v1/logs?${query}`)));
        const [l0, l1, l2, l3, l4] = logs.map((entry) => entry.id);
        expect(await ids(`token_id=${a.token_id}`)).toEqual([l4, l1, l0]);
        expect(await ids(`token_id=${b.token_id}`)).toEqual([l3, l2]);
        expect(await ids('authorized=false')).toEqual([l3, l1]);
        expect(await ids('authorized=true')).toEqual([l4, l2, l0]);
        expect(await ids(`token_id=${a.token_id}&authorized=false`)).toEqual([l1]);
        expect(await ids(`token_id=${UNKNOWN_TOKEN_ID}`)).toEqual([]);
      });

      it('filters by status: one status or a class (the dashboard Logs view)', async () => {
        const { c, a, logs } = await seeded();
        const ids = async (query: string) =>
          idsOf(ok<ListJson<LogJson>>(await c.request('GET', `/v1/logs?${query}`)));
        const [l0, l1, l2, l3, l4] = logs.map((entry) => entry.id);
        expect(await ids('status=403')).toEqual([l3, l1]);
        expect(await ids('status=4xx')).toEqual([l3, l1]);
        expect(await ids('status=2xx')).toEqual([l2, l0]);
        expect(await ids('status=5xx')).toEqual([l4]);
        expect(await ids(`status=2xx&token_id=${a.token_id}`)).toEqual([l0]);
        expect(await ids('status=404')).toEqual([]);
        expectError(await c.request('GET', '/v1/logs?status=4x'), 400, 'invalid_parameter');
        expectError(await c.request('GET', '/v1/logs?status=abc'), 400, 'invalid_parameter');
      });

      it('paginates with limit and cursor, ties on timestamp included', async () => {
        const c = await newClient(h);
        const entries = Array.from({ length: 23 }, (_, i) =>
          logEntry({ accountId: c.accountId, timestamp: ts(Math.floor(i / 4)) }),
        );
        await h.store.requestLogs.insertMany(entries);
        const all = ok<ListJson<LogJson>>(await c.request('GET', '/v1/logs?limit=100'));
        expect(all.data).toHaveLength(23);
        const first = ok<ListJson<LogJson>>(await c.request('GET', '/v1/logs'));
        expect(first.data).toHaveLength(20);
        expect(first.has_more).toBe(true);
        for (const limit of [1, 5, 7]) {
          const walked = await walk<LogJson>(c, '/v1/logs', limit);
          expect(walked.map((item) => item.request_id)).toEqual(idsOf(all));
        }
      });

      it('refuses bad parameters, naming them', async () => {
        const { c, a } = await seeded();
        expectError(
          await c.request('GET', '/v1/logs?authorized=yes'),
          400,
          'invalid_parameter',
          'authorized',
        );
        expectError(await c.request('GET', '/v1/logs?authorized=1'), 400, 'invalid_parameter', 'authorized');
        expectError(await c.request('GET', '/v1/logs?tokenId=x'), 400, 'unknown_parameter', 'tokenId');
        expectError(await c.request('GET', '/v1/logs?origin=x'), 400, 'unknown_parameter', 'origin');
        expectError(await c.request('GET', '/v1/logs?token_id=nope'), 400, 'invalid_parameter', 'token_id');
        expectError(await c.request('GET', '/v1/logs?limit=0'), 400, 'invalid_parameter', 'limit');
        expectError(await c.request('GET', '/v1/logs?limit=101'), 400, 'invalid_parameter', 'limit');
        // Out of range by sign or size: told the range, not "expected integer".
        for (const limit of ['-1', '99999999999999999999']) {
          const error = expectError(
            await c.request('GET', `/v1/logs?limit=${limit}`),
            400,
            'invalid_parameter',
            'limit',
          );
          expect(error.message).toMatch(/must be at (least 1|most 100)/);
        }
        for (const status of ['999', '6xx', '20', '2XX']) {
          const error = expectError(
            await c.request('GET', `/v1/logs?status=${status}`),
            400,
            'invalid_parameter',
            'status',
          );
          expect(error.message).toContain('from 100 to 599');
        }
        for (const twice of ['limit=1&limit=2', 'status=4xx&status=5xx']) {
          const param = twice.split('=')[0] ?? '';
          const error = expectError(
            await c.request('GET', `/v1/logs?${twice}`),
            400,
            'invalid_parameter',
            param,
          );
          expect(error.message).toContain('is given 2 times');
        }
        expectError(await c.request('GET', '/v1/logs?cursor=abc'), 400, 'invalid_cursor', 'cursor');
        const secret = await c.request('GET', `/v1/logs?token_id=${a.sanitized_key}`);
        const error = expectError(secret, 400, 'invalid_parameter', 'token_id');
        expect(error.message).toMatch(/sanitized token/);
        expect(secret.text).not.toContain(a.sanitized_key);
      });

      it('needs the API key', async () => {
        expectError(await h.request('GET', '/v1/logs', { apiKey: null }), 401, 'missing_api_key');
      });
    });

    describe('GET /v1/anomalies', () => {
      it('lists the account anomalies newest first, filtered by token_id, paginated', async () => {
        const c = await newClient(h);
        const other = await newClient(h);
        const a = await createToken(c);
        const b = await createToken(c, { name: 'second' });
        const otherToken = await createToken(other);
        const entries = [
          anomalyEntry(c.accountId, a.token_id, { timestamp: ts(1), country: 'BR' }),
          anomalyEntry(c.accountId, b.token_id, { timestamp: ts(2), reason: 'ip_not_allowed' }),
          anomalyEntry(c.accountId, a.token_id, { timestamp: ts(3), reason: 'ip_backoff', origin: null }),
          anomalyEntry(other.accountId, otherToken.token_id, { timestamp: ts(4) }),
          anomalyEntry(c.accountId, a.token_id, {
            timestamp: ts(5),
            reason: 'rate_spike',
            kind: 'anomaly',
            details: { requests_this_minute: 20, baseline_per_minute: 2.5, factor: 8 },
          }),
        ];
        await h.store.anomalies.insertMany(entries);

        const page = ok<ListJson<AnomalyJson>>(await c.request('GET', '/v1/anomalies'));
        expect(page.data.map((item) => item.anomaly_id)).toEqual([
          entries[4]?.id,
          entries[2]?.id,
          entries[1]?.id,
          entries[0]?.id,
        ]);
        for (const item of page.data) expect(Object.keys(item).sort()).toEqual(ANOMALY_FIELDS);
        // What the anomaly model measured is returned as it was stored.
        expect(page.data[0]?.details).toEqual({
          requests_this_minute: 20,
          baseline_per_minute: 2.5,
          factor: 8,
        });
        expect(page.data[3]).toEqual({
          anomaly_id: entries[0]?.id,
          timestamp: ts(1),
          token_id: a.token_id,
          origin: 'https://evil.example',
          ip: '198.51.100.9',
          country: 'BR',
          path: '/openai/v1/models',
          reason: 'origin_not_allowed',
          kind: 'breach',
          details: null,
        });
        const filtered = ok<ListJson<AnomalyJson>>(
          await c.request('GET', `/v1/anomalies?token_id=${a.token_id}`),
        );
        expect(filtered.data.map((item) => item.anomaly_id)).toEqual([
          entries[4]?.id,
          entries[2]?.id,
          entries[0]?.id,
        ]);
        const walked = await walk<AnomalyJson>(c, '/v1/anomalies', 1);
        expect(walked.map((item) => item.anomaly_id)).toEqual(page.data.map((item) => item.anomaly_id));
        // Another account's token id filters to nothing rather than revealing anything.
        const foreign = ok<ListJson<AnomalyJson>>(
          await c.request('GET', `/v1/anomalies?token_id=${otherToken.token_id}`),
        );
        expect(foreign.data).toEqual([]);
      });

      it('refuses bad parameters, naming them', async () => {
        const c = await newClient(h);
        expectError(
          await c.request('GET', '/v1/anomalies?authorized=true'),
          400,
          'unknown_parameter',
          'authorized',
        );
        expectError(await c.request('GET', '/v1/anomalies?token_id=x'), 400, 'invalid_parameter', 'token_id');
        expectError(await c.request('GET', '/v1/anomalies?limit=abc'), 400, 'invalid_parameter', 'limit');
        expectError(
          await h.request('GET', '/v1/anomalies', { apiKey: 'svc_sk_bad' }),
          401,
          'invalid_api_key',
        );
      });
    });
  });
}
