import { describe, expect, it } from 'vitest';
import type { RecordsMessage } from '../../src/requestlog/handover.js';
import type { DropReason } from '../../src/requestlog/batcher.js';
import {
  requestQueue,
  decodePacked,
  encodePacked,
  LOG_QUEUES,
  unpackRequests,
  type LogQueue,
} from '../../src/requestlog/log-protocol.js';
import { anomalyEntry } from '../store/helpers.js';
import { handover, junk, KB, record } from './helpers.js';

/**
 * Refused records and breach entries are what anyone holding a public token can make at line rate:
 * their own lane, and one token's share of it (src/requestlog/token-shares.ts).
 */

const refusedOf = (tokenId: string) =>
  record({
    accountId: `acc_${tokenId}`,
    tokenId,
    forwarded: false,
    authorized: false,
    status: 403,
    errorCode: 'origin_not_allowed',
    origin: 'https://evil.example',
    path: `/openai/${'x'.repeat(240)}`,
  });
const forwardedOf = (tokenId: string) =>
  record({ accountId: `acc_${tokenId}`, tokenId, forwarded: true, authorized: true, status: 200 });
const breachOf = (tokenId: string) =>
  anomalyEntry(`acc_${tokenId}`, tokenId, { path: `/openai/${'x'.repeat(240)}` });
const recordsIn = (message: RecordsMessage | undefined) =>
  unpackRequests(decodePacked(message?.keyed ?? encodePacked([])));

describe('Handover: a flood of refusals with one token', () => {
  it('sends each record to its queue', () => {
    expect(requestQueue(forwardedOf('tok_a'))).toBe('request_log');
    expect(requestQueue(refusedOf('tok_a'))).toBe('request_log_refused');
    expect(requestQueue(junk('/x'))).toBe('request_log_unmatched');
    expect(requestQueue(record({ accountId: null, tokenId: null, forwarded: true }))).toBe(
      'request_log_unmatched',
    );
  });

  it("never evicts another token's forwarded records", () => {
    const { h, dropped } = handover({ keyedBytes: 64 * KB, refusedBytes: 64 * KB });
    const sent: string[] = [];
    const posted = new Set<string>();
    let previous: RecordsMessage | undefined;
    for (let round = 0; round < 50; round += 1) {
      for (let i = 0; i < 2; i += 1) {
        const mine = forwardedOf('tok_b');
        sent.push(mine.requestId);
        h.request(mine);
      }
      // Each round's refusals alone are over both budgets.
      for (let i = 0; i < 200; i += 1) h.request(refusedOf('tok_a'));
      const message = h.take();
      // The worker lags a message behind: what is posted still counts against the budgets.
      if (previous !== undefined) h.done(previous.id);
      for (const r of recordsIn(message)) posted.add(r.requestId);
      previous = message;
    }
    expect(dropped('request_log')).toBe(0);
    expect(sent.filter((id) => !posted.has(id))).toEqual([]);
    expect(dropped('request_log_refused')).toBeGreaterThan(9_000);
  });

  it("caps one token's refused records at its share; another token's still get in", () => {
    const { h, dropped } = handover({ keyedBytes: 64 * KB, refusedBytes: 64 * KB });
    const early = refusedOf('tok_c');
    h.request(early);
    for (let i = 0; i < 1000; i += 1) h.request(refusedOf('tok_a'));
    const late = refusedOf('tok_c');
    h.request(late);
    const depth = h.depth('request_log_refused');
    const message = h.take();
    const ids = recordsIn(message).map((r) => r.requestId);
    expect(ids).toContain(early.requestId);
    expect(ids).toContain(late.requestId);
    expect(dropped('request_log', 'queue_full') + dropped('request_log_refused', 'queue_full')).toBe(0);
    const held = h.held('tok_a');
    // One eighth of the lane's 64 KiB, give or take a record.
    expect(held.refusedBytes).toBeLessThanOrEqual(8 * KB);
    expect(held.refusedBytes).toBeGreaterThan(7 * KB);
    expect(dropped('request_log_refused', 'token_share')).toBe(1000 - held.refused);
    expect(depth).toBe(held.refused + 2);
    // Posted and not yet stored still counts: the token stays at its share until they are stored.
    h.request(refusedOf('tok_a'));
    expect(dropped('request_log_refused', 'token_share')).toBe(1001 - held.refused);
    h.done(message?.id ?? 0);
    h.request(refusedOf('tok_a'));
    expect(h.held('tok_a')).toMatchObject({ refused: 1 });
    expect(h.held('tok_c')).toMatchObject({ refused: 0, refusedBytes: 0 });
  });

  it("caps one token's anomaly entries at its share; another token's still get in", () => {
    const { h, dropped } = handover({ anomalyBytes: 64 * KB });
    const early = breachOf('tok_c');
    h.anomaly(early);
    for (let i = 0; i < 1000; i += 1) h.anomaly(breachOf('tok_a'));
    const late = breachOf('tok_c');
    h.anomaly(late);
    const ids = h.take()?.anomalies.map((e) => e.id);
    expect(ids).toContain(early.id);
    expect(ids).toContain(late.id);
    expect(dropped('anomaly_log', 'queue_full')).toBe(0);
    const held = h.held('tok_a');
    expect(held.anomalyBytes).toBeLessThanOrEqual(8 * KB);
    expect(held.anomalyBytes).toBeGreaterThan(7 * KB);
    expect(dropped('anomaly_log', 'token_share')).toBe(1000 - held.anomalies);
  });

  it("a flood of a token's breaches never crowds out that token's own detector finding", () => {
    const { h, dropped } = handover({ anomalyBytes: 64 * KB });
    for (let i = 0; i < 1000; i += 1) h.anomaly(breachOf('tok_a'));
    expect(dropped('anomaly_log', 'token_share')).toBeGreaterThan(0);
    const spike = anomalyEntry('acc_a', 'tok_a', {
      kind: 'rate_spike',
      reason: 'rate_spike',
      details: { requests_this_minute: 900 },
    });
    h.anomaly(spike);
    expect(h.take()?.anomalies.map((e) => e.id)).toContain(spike.id);
    // It counts toward the queue's budget, not toward the token's share of breaches.
    expect(h.held('tok_a').anomalyBytes).toBeLessThanOrEqual(8 * KB);
  });

  it('keeps depth and every share exact through trim, post, done, lost workers and dropAll', () => {
    const { h, dropped } = handover({ refusedBytes: 32 * KB, anomalyBytes: 32 * KB });
    // Twelve tokens are over the lane: the oldest go (queue_full) and give their shares back;
    // tok_0 sends a third of it all and is held at its share (4 KiB) besides.
    const tokens = Array.from({ length: 12 }, (_, i) => `tok_${i}`);
    let handed = 0;
    const flood = (n: number) => {
      for (let i = 0; i < n; i += 1) {
        const tokenId = i % 3 === 0 ? 'tok_0' : (tokens[i % tokens.length] ?? '');
        h.request(refusedOf(tokenId));
        h.anomaly(breachOf(tokenId));
        handed += 1;
      }
    };
    const held = () => {
      const total = { refused: 0, refusedBytes: 0, anomalies: 0, anomalyBytes: 0 };
      for (const tokenId of tokens) {
        const one = h.held(tokenId);
        for (const [key, value] of Object.entries(one)) {
          expect(value).toBeGreaterThanOrEqual(0);
          total[key as keyof typeof total] += value;
        }
        expect(one.refused === 0).toBe(one.refusedBytes === 0);
        expect(one.anomalies === 0).toBe(one.anomalyBytes === 0);
      }
      return total;
    };
    /** Shares add up to the queues' depths; with nothing posted, their bytes to what waits. */
    const exact = (nothingPosted: boolean) => {
      const total = held();
      expect(total.refused).toBe(h.depth('request_log_refused'));
      expect(total.anomalies).toBe(h.depth('anomaly_log'));
      for (const queue of LOG_QUEUES) expect(h.depth(queue)).toBeGreaterThanOrEqual(0);
      if (nothingPosted) expect(total.refusedBytes + total.anomalyBytes).toBe(h.waitingBytes);
    };
    const refusedIn = (message: RecordsMessage | undefined) =>
      recordsIn(message).filter((r) => !r.forwarded).length;
    const lost = (queue: LogQueue) =>
      ['queue_full', 'token_share', 'worker_lost', 'closed'].reduce(
        (sum, reason) => sum + dropped(queue, reason as DropReason),
        0,
      );

    flood(400);
    expect(dropped('request_log_refused', 'queue_full')).toBeGreaterThan(0);
    expect(dropped('request_log_refused', 'token_share')).toBeGreaterThan(0);
    expect(dropped('anomaly_log', 'queue_full')).toBeGreaterThan(0);
    expect(dropped('anomaly_log', 'token_share')).toBeGreaterThan(0);
    exact(true);
    let stored = 0;
    let storedAnomalies = 0;
    const m1 = h.take();
    flood(50);
    exact(false);
    const m2 = h.take();
    h.done(m1?.id ?? 0);
    stored += refusedIn(m1);
    storedAnomalies += m1?.anomalies.length ?? 0;
    exact(false);
    flood(50);
    // m2 goes to the next worker, ahead of what came since.
    h.workerLost(true);
    exact(true);
    const m3 = h.take();
    const ids = (message: RecordsMessage | undefined) => recordsIn(message).map((r) => r.requestId);
    expect(ids(m3).slice(0, refusedIn(m2))).toEqual(ids(m2));
    expect(m3?.anomalies.slice(0, m2?.anomalies.length)).toEqual(m2?.anomalies);
    expect(refusedIn(m3)).toBeGreaterThan(refusedIn(m2));
    flood(30);
    // m3 is counted as lost.
    h.workerLost(false);
    expect(dropped('request_log_refused', 'worker_lost')).toBe(refusedIn(m3));
    expect(dropped('anomaly_log', 'worker_lost')).toBe(m3?.anomalies.length);
    exact(true);
    const m4 = h.take();
    h.done(m4?.id ?? 0);
    stored += refusedIn(m4);
    storedAnomalies += m4?.anomalies.length ?? 0;
    expect(held()).toEqual({ refused: 0, refusedBytes: 0, anomalies: 0, anomalyBytes: 0 });
    expect(h.depth('request_log_refused')).toBe(0);
    expect(h.depth('anomaly_log')).toBe(0);
    flood(30);
    h.take();
    flood(10);
    h.dropAll('closed');
    for (const queue of LOG_QUEUES.filter((q) => q !== 'usage')) expect(h.depth(queue)).toBe(0);
    expect(held()).toEqual({ refused: 0, refusedBytes: 0, anomalies: 0, anomalyBytes: 0 });
    // Every item handed over was stored or counted as dropped, once.
    expect(stored + lost('request_log_refused')).toBe(handed);
    expect(storedAnomalies + lost('anomaly_log')).toBe(handed);
    // Takes in again after all that.
    h.request(refusedOf('tok_0'));
    expect(h.held('tok_0')).toMatchObject({ refused: 1 });
    expect(h.depth('request_log_refused')).toBe(1);
  });
});
