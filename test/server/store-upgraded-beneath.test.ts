import { sql } from 'kysely';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../src/server/start.js';
import { databases, type OpenedDatabase } from '../support/databases.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';
import { mockProviderConfig } from '../support/server-config.js';
import { storeDb } from '../support/store-internals.js';

const FUTURE = '9999_from_a_newer_tokenproxy';

/**
 * A newer tokenproxy upgrades the store while an older process still runs on it (a rolling upgrade
 * that docs/operations.md says not to do, or a forgotten member). The old process used to go on
 * as if nothing happened; it now says so once in its log and /readyz takes it out with 503
 * `store_too_new`, while it keeps forwarding what it can.
 */
for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`a ${fixture.name} store upgraded under a running server`, () => {
    let db: OpenedDatabase;
    let mock: MockProvider;
    let server: RunningServer | undefined;
    const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
    const logLines: string[] = [];
    let apiKey = '';

    beforeAll(async () => {
      [db, mock] = await Promise.all([fixture.create(), startMockProvider()]);
      const config = await mockProviderConfig(db.dataDir, mock, {
        flags: db.database === undefined ? {} : { database: db.database },
      });
      const printed: string[] = [];
      server = await startServer(config, {
        env: {},
        logger: createLogger('info', { write: (line: string) => void logLines.push(line) }),
        print: (line) => printed.push(line),
      });
      apiKey = /svc_sk_\w+/.exec(printed.join('\n'))?.[0] ?? '';
    }, 120_000);

    afterAll(async () => {
      await server?.close();
      await dispatcher.close();
      await Promise.all([mock?.close(), db?.cleanup()]);
    });

    const readyz = async () => {
      const res = await request(`${server?.apiUrl ?? ''}/readyz`, { dispatcher });
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    };

    it('answers 503 store_too_new, logs it once, keeps forwarding, and is ready again once the schema is its own', async () => {
      const running = server as RunningServer;
      const created = await request(`${running.apiUrl}/v1/tokens`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'beneath',
          provider: 'openai',
          real_key: 'sk-upgraded-beneath-0000000000000',
          allowed_hosts: ['app.example.com'],
        }),
      });
      const token = (await created.body.json()) as { sanitized_key: string };
      expect(created.statusCode).toBe(201);
      expect(await readyz()).toEqual({ status: 200, body: { status: 'ready' } });

      // What a newer build's migration leaves in the store.
      const store = storeDb(running.store);
      await sql`insert into kysely_migration (name, timestamp) values (${FUTURE}, ${new Date().toISOString()})`.execute(
        store,
      );
      expect(await readyz()).toEqual({ status: 503, body: { status: 'store_too_new' } });
      expect(await readyz()).toEqual({ status: 503, body: { status: 'store_too_new' } });
      const told = logLines.filter((line) =>
        line.includes('upgraded by a newer tokenproxy while this process runs'),
      );
      expect(told).toHaveLength(1);
      expect(told[0]).toContain(FUTURE);

      const forwarded = await request(`${running.proxyUrl}/openai/v1/models`, {
        dispatcher,
        headers: { authorization: `Bearer ${token.sanitized_key}`, origin: 'https://app.example.com' },
      });
      await forwarded.body.dump();
      expect(forwarded.statusCode).toBe(200);

      // Put back (the newer build's backup restored): ready again.
      await sql`delete from kysely_migration where name = ${FUTURE}`.execute(store);
      expect(await readyz()).toEqual({ status: 200, body: { status: 'ready' } });
    });
  });
}
