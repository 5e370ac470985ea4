import { describe, expect, it } from 'vitest';
import { secretDigest } from '../../src/ids/formats.js';
import { startApiHarness, type ApiHarness, type ApiResponse } from '../support/api-harness.js';
import { databases, type DatabaseFixture } from '../support/databases.js';
import {
  createToken,
  newClient,
  ok,
  type CreatedTokenJson,
  type KeyJson,
  type ListJson,
  type TokenJson,
} from './helpers.js';
import { dataDirContents, distinctive, leaks, postgresDump } from './secrets-scan.js';

interface Scenario {
  h: ApiHarness;
  responses: ApiResponse[];
  realKeys: Record<string, string>;
  tokens: CreatedTokenJson[];
  tokenIds: string[];
  apiKeys: Record<string, string>;
}

/** Exercises every route that takes or could echo a real key: create, list, get, rotate, delete, errors. */
async function runScenario(fixture: DatabaseFixture): Promise<Scenario> {
  const h = await startApiHarness(fixture);
  const responses: ApiResponse[] = [];
  const track = async (p: Promise<ApiResponse>): Promise<ApiResponse> => {
    const res = await p;
    responses.push(res);
    return res;
  };
  const c = await newClient(h, 'unlimited', 'secretive');
  const realKeys = {
    inline: distinctive('INLINE'),
    stored: distinctive('STORED'),
    rotated: distinctive('ROTATED'),
    rotatedAgain: distinctive('ROTATED-AGAIN'),
    deleted: distinctive('DELETED'),
    refused: distinctive('REFUSED'),
  };

  // A token with its own key, given as real_key.
  const inline = ok<CreatedTokenJson>(
    await track(
      c.request('POST', '/v1/tokens', {
        body: { name: 'inline', provider: 'openai', allowed_hosts: ['localhost'], real_key: realKeys.inline },
      }),
    ),
    201,
  );
  // A stored key, a token on it, then two rotations.
  const stored = ok<KeyJson>(
    await track(
      c.request('POST', '/v1/keys', {
        body: { name: 'stored', provider: 'anthropic', real_key: realKeys.stored },
      }),
    ),
    201,
  );
  const onStored = ok<CreatedTokenJson>(
    await track(
      c.request('POST', '/v1/tokens', {
        body: {
          name: 'on-stored',
          provider: 'anthropic',
          allowed_hosts: ['localhost'],
          key_id: stored.key_id,
        },
      }),
    ),
    201,
  );
  ok(
    await track(
      c.request('POST', `/v1/keys/${stored.key_id}/rotate`, { body: { real_key: realKeys.rotated } }),
    ),
  );
  ok(
    await track(
      c.request('POST', `/v1/keys/${stored.key_id}/rotate`, { body: { real_key: realKeys.rotatedAgain } }),
    ),
  );
  // A key that is deleted, with a token on it.
  const doomed = ok<KeyJson>(
    await track(
      c.request('POST', '/v1/keys', {
        body: { name: 'doomed', provider: 'openai', real_key: realKeys.deleted },
      }),
    ),
    201,
  );
  const onDoomed = await createToken(c, { real_key: undefined, key_id: doomed.key_id, name: 'on-doomed' });
  ok(await track(c.request('DELETE', `/v1/keys/${doomed.key_id}`)));
  ok(await track(c.request('DELETE', `/v1/keys/${doomed.key_id}`)));
  ok(
    await track(
      c.request('POST', `/v1/keys/${doomed.key_id}/rotate`, { body: { real_key: realKeys.refused } }),
    ),
    409,
  );

  // Refused requests that carry a real key.
  const refusals: unknown[] = [
    { name: 'bad', provider: 'nope', allowed_hosts: ['localhost'], real_key: realKeys.refused },
    { name: 'bad', provider: 'openai', allowed_hosts: ['bad host'], real_key: realKeys.refused },
    { name: 'bad', provider: 'openai', allowed_hosts: ['localhost'], real_key: `${realKeys.refused} x` },
    { name: 'bad', provider: 'openai', allowed_hosts: ['localhost'], real_key: `${realKeys.refused}\n` },
    {
      name: 'bad',
      provider: 'openai',
      allowed_hosts: ['localhost'],
      real_key: realKeys.refused,
      key_id: stored.key_id,
    },
    { name: 'bad', provider: 'openai', allowed_hosts: ['localhost'], realKey: realKeys.refused },
    {
      name: 'bad',
      provider: 'openai',
      allowed_hosts: ['localhost'],
      real_key: realKeys.refused,
      colour: 'blue',
    },
    { name: 5, provider: 'openai', allowed_hosts: ['localhost'], real_key: realKeys.refused },
    {
      name: 'bad',
      provider: 'openai',
      allowed_hosts: ['localhost'],
      real_key: realKeys.refused,
      expires_at: '2000-01-01T00:00:00.000Z',
    },
  ];
  for (const body of refusals) {
    const res = await track(c.request('POST', '/v1/tokens', { body }));
    expect(res.status, res.text).toBeGreaterThanOrEqual(400);
  }
  const malformed = await track(
    c.request('POST', '/v1/tokens', { raw: `{"real_key":"${realKeys.refused}"` }),
  );
  expect(malformed.status).toBe(400);
  const wrongType = await track(
    c.request('POST', '/v1/keys', {
      raw: JSON.stringify({ name: 'x', provider: 'openai', real_key: realKeys.refused }),
      headers: { 'content-type': 'text/plain' },
    }),
  );
  expect(wrongType.status).toBe(415);
  ok(
    await track(
      c.request('POST', `/v1/keys/${stored.key_id}/rotate`, { body: { real_key: `${realKeys.refused} ` } }),
    ),
    400,
  );
  // A free account over its plan limit, creating with a real key.
  const small = await newClient(h, 'free', 'small');
  for (let i = 0; i < 4; i++) {
    await track(
      small.request('POST', '/v1/tokens', {
        body: { name: `s${i}`, provider: 'openai', allowed_hosts: ['localhost'], real_key: realKeys.refused },
      }),
    );
  }
  expect(responses.at(-1)?.status).toBe(403);

  // Reads of everything.
  ok(await track(c.request('GET', '/v1/tokens')));
  ok(await track(c.request('GET', '/v1/keys')));
  for (const t of [inline, onStored, onDoomed]) ok(await track(c.request('GET', `/v1/tokens/${t.token_id}`)));
  for (const k of [stored.key_id, doomed.key_id, inline.real_key_ref])
    ok(await track(c.request('GET', `/v1/keys/${k}`)));
  ok(await track(c.request('DELETE', `/v1/tokens/${inline.token_id}`)));
  ok(await track(c.request('GET', '/v1/account')));

  const listed = ok<ListJson<TokenJson>>(await c.request('GET', '/v1/tokens'));
  const smallTokens = ok<ListJson<TokenJson>>(await small.request('GET', '/v1/tokens'));
  const tokenIds = [...listed.data, ...smallTokens.data].map((t) => t.token_id);
  return {
    h,
    responses,
    realKeys,
    tokens: [inline, onStored, onDoomed],
    tokenIds,
    apiKeys: { harness: h.apiKey, secretive: c.apiKey, small: small.apiKey },
  };
}

/** Secrets stay secret: see secrets-scan.ts for what is looked for and how. */

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`secrets stay secret (${fixture.name})`, () => {
    it('never shows a real key in any response, log line, data file or database row', async () => {
      const s = await runScenario(fixture);
      const { h } = s;
      let closed = false;
      try {
        // Every sanitized key handed out (each only in the 201 of its creation).
        const ownKey = (res: ApiResponse) =>
          (res.body as { sanitized_key?: string } | undefined)?.sanitized_key;
        const handedOut = new Set([
          ...s.tokens.map((t) => t.sanitized_key),
          ...s.responses.flatMap((r) => ownKey(r) ?? []),
        ]);
        expect(handedOut.size).toBe(6);
        const sanitized = Object.fromEntries([...handedOut].map((key, i) => [`sanitized${i}`, key]));
        const notStored = { ...sanitized, ...s.apiKeys };

        // 1. Responses: real keys never; sanitized keys only in their own creation response.
        expect(s.responses.length).toBeGreaterThan(25);
        for (const res of s.responses) {
          expect(leaks(Buffer.from(res.text), s.realKeys), res.text.slice(0, 300)).toEqual([]);
          expect(leaks(Buffer.from(JSON.stringify(res.headers)), s.realKeys)).toEqual([]);
        }
        for (const res of s.responses) {
          const own = ownKey(res);
          if (own !== undefined) expect(res.status).toBe(201);
          const others = Object.fromEntries(Object.entries(sanitized).filter(([, v]) => v !== own));
          expect(leaks(Buffer.from(res.text), others)).toEqual([]);
          expect(leaks(Buffer.from(res.text), s.apiKeys)).toEqual([]);
        }

        // 2. Logs: no real key, sanitized key or API key, in any encoding.
        expect(h.logs.length).toBeGreaterThan(0);
        const logText = Buffer.from(h.logs.join('\n'));
        expect(leaks(logText, s.realKeys)).toEqual([]);
        expect(leaks(logText, notStored)).toEqual([]);

        // 3. Database rows (PostgreSQL): no secret in any table; the digests are there.
        if (fixture.name === 'postgres') {
          const dump = await postgresDump(h.db.database ?? '');
          expect(leaks(dump, s.realKeys)).toEqual([]);
          expect(leaks(dump, notStored)).toEqual([]);
          // Positive controls: the dump holds what it should, so the scan is not vacuous.
          for (const id of s.tokenIds) expect(dump.includes(id)).toBe(true);
          for (const key of handedOut) expect(dump.includes(secretDigest(key))).toBe(true);
          for (const key of Object.values(s.apiKeys)) expect(dump.includes(secretDigest(key))).toBe(true);
        }

        // 4. Files of the data dir, the SQLite database and its WAL/SHM included: first while the
        // store is open, then after it closed (the WAL folded into the main file).
        const scanFiles = async (when: string) => {
          const files = await dataDirContents(h.db.dataDir);
          for (const { file, bytes } of files) {
            expect(leaks(bytes, s.realKeys), `${when}: ${file}`).toEqual([]);
            expect(leaks(bytes, notStored), `${when}: ${file}`).toEqual([]);
          }
          return files;
        };
        const open = await scanFiles('open');
        await h.app.close();
        await h.store.close();
        closed = true;
        const after = await scanFiles('closed');
        if (fixture.name === 'sqlite') {
          expect(open.map((f) => f.file)).toContain('tokenproxy.db');
          const all = Buffer.concat(after.map((f) => f.bytes));
          // Positive controls, as above.
          for (const id of s.tokenIds) expect(all.includes(id)).toBe(true);
          for (const key of handedOut) expect(all.includes(secretDigest(key))).toBe(true);
          for (const key of Object.values(s.apiKeys)) expect(all.includes(secretDigest(key))).toBe(true);
        }
      } finally {
        if (!closed) await h.app.close();
        await h.db.cleanup();
      }
    });
  });
}
