import { describe, expect, it } from 'vitest';
import { createRequestLogWriter } from '../../src/requestlog/batch-writer.js';
import { hourOf, refusalReason, rollupsOf } from '../../src/requestlog/rollups.js';
import { capture, record } from './helpers.js';

describe('usage rollups: rules', () => {
  it.each([
    [403, false, 'origin_not_allowed', 'origin_or_ip_not_allowed'],
    [403, false, 'ip_not_allowed', 'origin_or_ip_not_allowed'],
    [429, false, 'ip_backoff', 'ip_backoff'],
    [429, true, 'rate_limited', 'rate_or_quota_limit'],
    [429, true, 'quota_exceeded', 'rate_or_quota_limit'],
    [429, true, 'budget_exceeded', 'budget_exceeded'],
    [401, false, 'token_revoked', 'token_revoked_or_expired'],
    [400, true, 'provider_mismatch', 'provider_mismatch'],
    [502, true, 'upstream_unreachable', 'upstream_error'],
    [504, true, 'upstream_timeout', 'upstream_error'],
    [500, true, 'internal_error', 'other'],
    [429, true, null, 'rate_or_quota_limit'],
  ] as const)('status %i (authorized %s, code %s) is refused as %s', (status, authorized, code, reason) => {
    expect(refusalReason(status, authorized, code)).toBe(reason);
  });

  it('an ISO timestamp belongs to the start of its UTC hour', () => {
    expect(hourOf('2026-03-10T12:59:59.999Z')).toBe('2026-03-10T12:00:00.000Z');
    expect(hourOf('2026-03-10T13:00:00.000Z')).toBe('2026-03-10T13:00:00.000Z');
  });

  it('counts a batch per account, hour and outcome, leaving out records of no account', () => {
    const a = { accountId: 'acct_a', tokenId: 't1' };
    const rows = rollupsOf([
      record({ ...a, forwarded: true, timestamp: '2026-03-10T12:00:01.000Z' }),
      record({ ...a, forwarded: true, timestamp: '2026-03-10T12:59:00.000Z' }),
      record({
        ...a,
        forwarded: false,
        status: 403,
        authorized: false,
        timestamp: '2026-03-10T12:30:00.000Z',
      }),
      record({ ...a, forwarded: true, timestamp: '2026-03-10T13:00:00.000Z' }),
      record({ accountId: 'acct_b', tokenId: 't2', forwarded: true, timestamp: '2026-03-10T12:00:00.000Z' }),
      record({
        accountId: null,
        tokenId: null,
        forwarded: false,
        status: 401,
        timestamp: '2026-03-10T12:00:00.000Z',
      }),
    ]);
    expect(rows).toEqual([
      { accountId: 'acct_a', hour: '2026-03-10T12:00:00.000Z', outcome: 'forwarded', requests: 2 },
      {
        accountId: 'acct_a',
        hour: '2026-03-10T12:00:00.000Z',
        outcome: 'origin_or_ip_not_allowed',
        requests: 1,
      },
      { accountId: 'acct_a', hour: '2026-03-10T13:00:00.000Z', outcome: 'forwarded', requests: 1 },
      { accountId: 'acct_b', hour: '2026-03-10T12:00:00.000Z', outcome: 'forwarded', requests: 1 },
    ]);
  });
});

describe('usage rollups in the log writer', () => {
  it('are added after the records; a failure is logged once and never stores the batch again', async () => {
    const calls: string[] = [];
    const log = capture();
    const writer = createRequestLogWriter({
      logger: log.logger,
      flushIntervalMs: 60_000,
      store: {
        requestLogs: { insertMany: () => (calls.push('records'), Promise.resolve()) },
        usageRollups: { add: () => (calls.push('rollups'), Promise.reject(new Error('database went away'))) },
      },
    });
    writer.write(record({ accountId: 'acct_a', tokenId: 't1', forwarded: true }));
    await writer.close();
    expect(calls).toEqual(['records', 'rollups']);
    expect(log.lines.filter((l) => l.includes('could not add the usage rollups'))).toHaveLength(1);
  });
});
