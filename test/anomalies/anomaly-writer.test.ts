import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnomalyWriter } from '../../src/anomalies/anomaly-writer.js';
import type { UnauthorizedAttempt } from '../../src/anomalies/record.js';
import { createLogger } from '../../src/observability/logger.js';
import type { Store } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { createToken, newAccount } from '../store/helpers.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`anomaly writer on ${fixture.name}`, () => {
    let opened: OpenedDatabase;
    let store: Store;
    const logger = createLogger('silent');

    beforeAll(async () => {
      opened = await fixture.create();
      store = opened.store;
    });
    afterAll(async () => {
      await opened.cleanup();
    });

    it('stores each unauthorized attempt as a breach, off the caller path', async () => {
      const { account } = await newAccount(store);
      const token = await createToken(store, account.id);
      let inserts = 0;
      const writer = createAnomalyWriter({
        store: {
          anomalies: {
            insertMany: (entries) => {
              inserts += 1;
              return store.anomalies.insertMany(entries);
            },
          },
        },
        logger,
        flushIntervalMs: 60_000,
      });
      const attempts: UnauthorizedAttempt[] = (
        ['origin_not_allowed', 'ip_not_allowed', 'ip_backoff'] as const
      ).map((reason, i) => ({
        requestId: `req_anomaly${String(i)}${token.id.slice(0, 10)}`,
        timestamp: `2026-05-01T00:00:0${String(i)}.000Z`,
        accountId: account.id,
        tokenId: token.id,
        origin: i === 2 ? null : 'https://evil.example',
        ip: '198.51.100.4',
        country: i === 0 ? 'BR' : null,
        path: '/openai/v1/models',
        reason,
      }));
      for (const attempt of attempts) expect(writer.onUnauthorized(attempt)).toBeUndefined();
      expect(writer.size).toBe(3);
      expect((await store.anomalies.list(account.id, {}, { limit: 10 })).items).toEqual([]);

      await writer.flush();
      expect(inserts).toBe(1);
      const listed = await store.anomalies.list(account.id, {}, { limit: 10 });
      expect(listed.items).toEqual(
        [...attempts].reverse().map((attempt) => ({
          id: attempt.requestId,
          accountId: account.id,
          tokenId: token.id,
          timestamp: attempt.timestamp,
          origin: attempt.origin,
          ip: attempt.ip,
          country: attempt.country,
          path: attempt.path,
          reason: attempt.reason,
          kind: 'breach',
          details: null,
        })),
      );
      await writer.close();
    });

    it('stores entries of other kinds and flushes on close', async () => {
      const { account } = await newAccount(store);
      const token = await createToken(store, account.id);
      const writer = createAnomalyWriter({ store, logger, flushIntervalMs: 60_000 });
      const entry = {
        id: `anom_${token.id.slice(0, 20)}`,
        accountId: account.id,
        tokenId: token.id,
        timestamp: '2026-05-02T00:00:00.000Z',
        origin: 'https://app.example',
        ip: '203.0.113.1',
        country: null,
        path: '/openai/v1/chat/completions',
        reason: 'rate_spike',
        kind: 'rate_spike',
        details: { per_minute: 900, baseline: 30 },
      };
      writer.write(entry);
      await writer.close();
      expect((await store.anomalies.list(account.id, {}, { limit: 10 })).items).toEqual([entry]);
    });
  });
}
