import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestLogJson as LogJson } from '../../src/requestlog/json.js';
import { errorCodeParam, ipParam, timeRange } from '../../src/api/routes/log-filters.js';
import { TokenProxyError } from '../../src/errors/tokenproxy-error.js';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import { requestLogEntry as logEntry } from '../store/helpers.js';
import { expectError, newClient, ok, type ListJson } from './helpers.js';

const ts = (i: number): string => new Date(Date.UTC(2026, 5, 1, 0, 0, i)).toISOString();

describe('log filter parameters', () => {
  it.each([
    ['2026-06-01T00:00:00Z', '2026-06-01T00:00:00.000Z'],
    ['2026-06-01T02:00:00.5+02:00', '2026-06-01T00:00:00.500Z'],
    ['2026-06-01T00:00Z', '2026-06-01T00:00:00.000Z'],
    ['2028-02-29T00:00:00Z', '2028-02-29T00:00:00.000Z'],
  ])('since %s is the instant %s', (text, iso) => {
    expect(timeRange(text, undefined)).toEqual({ since: iso, until: undefined });
  });

  it.each([
    'yesterday',
    '2026-06-01',
    '2026-06-01T00:00:00',
    '1717200000',
    '2026-13-01T00:00:00Z',
    // Days the month does not have: Date.parse alone rolls them over into the next month.
    '2026-02-30T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2027-02-29T00:00:00Z',
    '2026-06-00T00:00:00Z',
  ])('since %s is refused, naming the accepted form', (text) => {
    expect(() => timeRange(text, undefined)).toThrow(
      /Invalid query parameter "since": expected an ISO 8601 time/,
    );
  });

  it.each(['9999-12-31T23:59:59-10:00', '1969-12-31T23:59:59Z'])(
    'until %s, outside what the store can order, is refused with the range',
    (text) => {
      expect(() => timeRange(undefined, text)).toThrow(
        /Invalid query parameter "until": expected a time from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z/,
      );
    },
  );

  it('until must be later than since', () => {
    expect(() => timeRange('2026-06-02T00:00:00Z', '2026-06-01T00:00:00Z')).toThrow(/"until": must be later/);
  });

  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['2001:DB8:0:0::1', '2001:db8::1'],
    ['::ffff:198.51.100.4', '198.51.100.4'],
  ])('ip %s is looked up as %s', (text, stored) => {
    expect(ipParam(text)).toBe(stored);
  });

  it.each(['203.0.113.0/24', '010.0.0.1', 'example.com', '[::1]:443'])('ip %s is refused', (text) => {
    expect(() => ipParam(text)).toThrow(/Invalid query parameter "ip": expected one IPv4 or IPv6 address/);
  });

  it('error_code must be a documented code', () => {
    expect(errorCodeParam('upstream_timeout')).toBe('upstream_timeout');
    try {
      errorCodeParam('timeout');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(TokenProxyError);
      expect((err as TokenProxyError).message).toMatch(
        /unknown error code "timeout"; use a code from docs\/errors.md/,
      );
    }
  });
});

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`finding a request (${fixture.name})`, () => {
    let h: ApiHarness;

    beforeAll(async () => {
      h = await startApiHarness(fixture);
    });
    afterAll(async () => {
      await h.close();
    });

    it('filters by since, until, status, error_code and ip, alone and together, with cursors', async () => {
      const c = await newClient(h);
      const mine = { accountId: c.accountId };
      const logs = [
        logEntry({ ...mine, timestamp: ts(1), ip: '203.0.113.7' }),
        logEntry({
          ...mine,
          timestamp: ts(2),
          ip: '2001:db8::1',
          status: 504,
          errorCode: 'upstream_timeout',
        }),
        logEntry({
          ...mine,
          timestamp: ts(3),
          ip: '203.0.113.7',
          status: 403,
          authorized: false,
          errorCode: 'origin_not_allowed',
        }),
        logEntry({
          ...mine,
          timestamp: ts(4),
          ip: '198.51.100.4',
          status: 504,
          errorCode: 'upstream_timeout',
        }),
        logEntry({ ...mine, timestamp: ts(5), ip: '203.0.113.7' }),
      ];
      const other = await newClient(h);
      await h.store.requestLogs.insertMany([
        ...logs,
        logEntry({
          accountId: other.accountId,
          timestamp: ts(3),
          status: 504,
          errorCode: 'upstream_timeout',
        }),
      ]);
      const ids = async (query: string): Promise<string[]> =>
        ok<ListJson<LogJson>>(await c.request('GET', `/v1/logs?${query}`)).data.map((r) => r.request_id);
      const id = (i: number): string => logs[i]?.id ?? '';

      expect(await ids(`since=${ts(2)}&until=${ts(4)}`)).toEqual([id(2), id(1)]);
      expect(await ids(`since=${encodeURIComponent('2026-06-01T02:00:04+02:00')}`)).toEqual([id(4), id(3)]);
      expect(await ids('error_code=upstream_timeout')).toEqual([id(3), id(1)]);
      expect(await ids('ip=203.0.113.7')).toEqual([id(4), id(2), id(0)]);
      expect(await ids(`ip=${encodeURIComponent('2001:DB8::1')}`)).toEqual([id(1)]);
      expect(await ids('status=5xx&ip=198.51.100.4')).toEqual([id(3)]);
      expect(await ids(`error_code=upstream_timeout&until=${ts(3)}`)).toEqual([id(1)]);
      // A filter holds across pages.
      const first = ok<ListJson<LogJson>>(await c.request('GET', '/v1/logs?ip=203.0.113.7&limit=2'));
      expect(first.data.map((r) => r.request_id)).toEqual([id(4), id(2)]);
      const second = ok<ListJson<LogJson>>(
        await c.request('GET', `/v1/logs?ip=203.0.113.7&limit=2&cursor=${first.next_cursor ?? ''}`),
      );
      expect(second.data.map((r) => r.request_id)).toEqual([id(0)]);
      expect(second.has_more).toBe(false);
    });

    it('refuses bad filters with invalid_parameter naming the parameter', async () => {
      const c = await newClient(h);
      expectError(await c.request('GET', '/v1/logs?since=yesterday'), 400, 'invalid_parameter', 'since');
      expectError(
        await c.request('GET', `/v1/logs?since=${ts(5)}&until=${ts(1)}`),
        400,
        'invalid_parameter',
        'until',
      );
      expectError(await c.request('GET', '/v1/logs?error_code=nope'), 400, 'invalid_parameter', 'error_code');
      expectError(await c.request('GET', '/v1/logs?ip=10.0.0.0%2F8'), 400, 'invalid_parameter', 'ip');
    });

    it('GET /v1/logs/:request_id returns one record of the account, 404 request_log_not_found otherwise', async () => {
      const c = await newClient(h);
      const other = await newClient(h);
      const entry = logEntry({
        accountId: c.accountId,
        timestamp: ts(7),
        status: 502,
        errorCode: 'upstream_unreachable',
      });
      const theirs = logEntry({ accountId: other.accountId, timestamp: ts(7) });
      await h.store.requestLogs.insertMany([entry, theirs]);
      const found = ok<LogJson>(await c.request('GET', `/v1/logs/${entry.id}`));
      expect(found).toMatchObject({ request_id: entry.id, status: 502, error_code: 'upstream_unreachable' });
      const listed = ok<ListJson<LogJson>>(await c.request('GET', `/v1/logs?since=${ts(7)}`)).data[0];
      expect(found).toEqual(listed);
      expectError(await c.request('GET', `/v1/logs/${theirs.id}`), 404, 'request_log_not_found', 'id');
      expectError(
        await c.request('GET', '/v1/logs/req_1111111111111111111111'),
        404,
        'request_log_not_found',
      );
      expectError(await c.request('GET', '/v1/logs/not-a-request-id'), 404, 'request_log_not_found');
    });
  });
}
