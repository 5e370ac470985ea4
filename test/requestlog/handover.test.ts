import { describe, expect, it } from 'vitest';
import { trimTarget } from '../../src/requestlog/lane.js';
import { decodePacked, encodePacked, unpackRequests } from '../../src/requestlog/log-protocol.js';
import {
  RECORD_OVERHEAD_BYTES,
  requestRecordBytes,
  anomalyEntryBytes,
} from '../../src/requestlog/record-size.js';
import { UsageTally } from '../../src/requestlog/usage-tally.js';
import { anomalyEntry } from '../store/helpers.js';
import { handover, junk, KB, record } from './helpers.js';

/** What the proxy's thread holds for the log worker: budgets, hand-over and what survives a crash. */

const keyed = (overrides = {}) => record({ accountId: 'acc_1', tokenId: 'tok_1', ...overrides });

describe('record size estimates', () => {
  it.each([
    ['a short record', keyed(), 300, 500],
    ['a 15 kB path', junk(), 15_000 + RECORD_OVERHEAD_BYTES, 16_000],
  ])('%s', (_name, r, min, max) => {
    const bytes = requestRecordBytes(r);
    expect(bytes).toBeGreaterThanOrEqual(min);
    expect(bytes).toBeLessThan(max);
  });

  it('count anomaly details', () => {
    const plain = anomalyEntry('acc_1', 'tok_1');
    const detailed = anomalyEntry('acc_1', 'tok_1', { details: { rate: 12.5, baseline: 1 } });
    expect(anomalyEntryBytes(detailed) - anomalyEntryBytes(plain)).toBe(
      JSON.stringify({ rate: 12.5, baseline: 1 }).length,
    );
  });
});

describe('trimTarget', () => {
  it.each([
    // count, bytes, posted count, posted bytes, budget, max → dropped count
    ['under budget', 5, 500, 0, 0, 1000, 100, 0],
    ['over bytes: down to nine tenths', 12, 1200, 0, 0, 1000, 100, 3],
    ['over count: down to nine tenths', 101, 101, 0, 0, 1e9, 100, 11],
    ['posted bytes count too', 5, 500, 5, 500, 900, 100, 2],
    ['posted alone over budget: all waiting go', 3, 300, 20, 2000, 1000, 100, 3],
  ])('%s', (_name, count, bytes, countPosted, bytesPosted, budget, max, expected) => {
    const result = trimTarget(count, bytes, countPosted, bytesPosted, budget, max, () => 100);
    expect(result).toEqual({ count: expected, bytes: expected * 100 });
  });
});

describe('Handover', () => {
  it('bounds records where no token matched by their own byte budget, oldest first, counted', () => {
    const { h, dropped } = handover({ unmatchedBytes: 160 * KB });
    for (let i = 0; i < 100; i += 1) h.request(junk());
    // ~10 fit; records of a known token are not touched by it.
    h.request(keyed({ forwarded: true }));
    expect(dropped('request_log_unmatched', 'queue_full')).toBeGreaterThanOrEqual(89);
    expect(dropped('request_log')).toBe(0);
    expect(h.depth('request_log_unmatched') + dropped('request_log_unmatched')).toBe(100);
    expect(h.depth('request_log')).toBe(1);
    const message = h.take();
    expect(unpackRequests(decodePacked(message?.keyed ?? encodePacked([])))).toHaveLength(1);
  });

  it('counts what is posted against the budget until the worker says it is stored', () => {
    const { h, dropped } = handover({ unmatchedBytes: 160 * KB });
    for (let i = 0; i < 9; i += 1) h.request(junk());
    const first = h.take();
    expect(first?.unmatched.length).toBeGreaterThan(0);
    // The worker has not stored them: new junk only fits in what is left of the budget.
    for (let i = 0; i < 9; i += 1) h.request(junk());
    expect(dropped('request_log_unmatched')).toBeGreaterThan(0);
    const before = dropped('request_log_unmatched');
    h.done(first?.id ?? 0);
    h.take();
    for (let i = 0; i < 2; i += 1) h.request(junk());
    expect(dropped('request_log_unmatched')).toBe(before);
  });

  it('keeps records of a known token, anomalies and usage across a lost worker; lets junk go', () => {
    const { h, dropped } = handover();
    const mine = [keyed({ forwarded: true }), keyed({ forwarded: true }), keyed({ status: 403 })];
    for (const r of mine) h.request(r);
    h.request(junk('/x'));
    const entry = anomalyEntry('acc_1', 'tok_1');
    h.anomaly(entry);
    const first = h.take();
    expect(first?.usage).toEqual([
      { tokenId: 'tok_1', accountId: 'acc_1', count: 2, lastUsedAt: '2026-03-10T12:00:00.000Z' },
    ]);
    const later = keyed({ forwarded: true });
    h.request(later);
    h.workerLost(true);
    expect(dropped('request_log_unmatched', 'worker_lost')).toBe(1);
    const again = h.take();
    // Each in its own lane again, in its order: the forwarded ones first in the payload, then the refused.
    const [first1, first2, refused] = mine;
    expect(unpackRequests(decodePacked(again?.keyed ?? encodePacked([]))).map((r) => r.requestId)).toEqual(
      [first1, first2, later, refused].map((r) => r?.requestId),
    );
    expect(again?.anomalies).toEqual([entry]);
    expect(again?.usage).toEqual([
      { tokenId: 'tok_1', accountId: 'acc_1', count: 3, lastUsedAt: '2026-03-10T12:00:00.000Z' },
    ]);
    h.done(again?.id ?? 0);
    expect(h.depth('request_log')).toBe(0);
    expect(h.depth('anomaly_log')).toBe(0);
    expect(h.usagePending).toBe(false);
  });

  it('gives a worker that keeps dying nothing it was given before, but keeps usage', () => {
    const { h, dropped } = handover();
    h.request(keyed({ forwarded: true }));
    h.anomaly(anomalyEntry('acc_1', 'tok_1'));
    h.take();
    h.workerLost(false);
    expect(dropped('request_log', 'worker_lost')).toBe(1);
    expect(dropped('anomaly_log', 'worker_lost')).toBe(1);
    expect(h.take()?.usage).toHaveLength(1);
  });

  it('sends usage with one message at a time, all of it on a flush', () => {
    const { h } = handover();
    h.request(keyed({ forwarded: true }));
    const first = h.take();
    expect(first?.usage).toHaveLength(1);
    h.request(keyed({ forwarded: true }));
    expect(h.take()?.usage).toEqual([]);
    h.request(keyed({ forwarded: true }));
    expect(h.take(true)?.usage).toHaveLength(1);
    expect(h.take()).toBeUndefined();
  });
});

/** A refusal as a flood makes it: another origin, the 256 bytes of path a refused record keeps. */
describe('UsageTally', () => {
  it('counts forwarded requests of known tokens per token and month, with the latest time', () => {
    const tally = new UsageTally();
    const a = { accountId: 'acc_a', tokenId: 'tok_a', forwarded: true };
    for (const r of [
      record({ ...a, timestamp: '2026-03-31T23:59:59.000Z' }),
      record({ ...a, timestamp: '2026-03-31T23:59:58.000Z' }),
      record({ ...a, timestamp: '2026-04-01T00:00:00.000Z' }),
      record({ ...a, forwarded: false }),
      record({ accountId: null, tokenId: null, forwarded: true }),
      record({ accountId: 'acc_b', tokenId: 'tok_b', forwarded: true }),
    ])
      tally.add(r);
    expect(tally.take()).toEqual([
      { tokenId: 'tok_a', accountId: 'acc_a', count: 2, lastUsedAt: '2026-03-31T23:59:59.000Z' },
      { tokenId: 'tok_a', accountId: 'acc_a', count: 1, lastUsedAt: '2026-04-01T00:00:00.000Z' },
      { tokenId: 'tok_b', accountId: 'acc_b', count: 1, lastUsedAt: '2026-03-10T12:00:00.000Z' },
    ]);
    expect(tally.size).toBe(0);
    tally.merge([{ tokenId: 'tok_a', accountId: 'acc_a', count: 5, lastUsedAt: '2026-04-02T00:00:00.000Z' }]);
    tally.add(record({ ...a, timestamp: '2026-04-01T00:00:00.000Z' }));
    expect(tally.take()).toEqual([
      { tokenId: 'tok_a', accountId: 'acc_a', count: 6, lastUsedAt: '2026-04-02T00:00:00.000Z' },
    ]);
  });
});
