import { describe, expect, it } from 'vitest';
import { AuthenticationError, ConflictError, PermissionError } from '../../clients/node/src/index.js';
import { client, SANITIZED, t, tokenParams, useClientTestServer } from './node-support.js';

const TOKEN_ID = /^[1-9A-HJ-NP-Za-km-z]{43}$/;

useClientTestServer();

describe('@tokenproxy/client against a real server', () => {
  it('creates, lists, gets and revokes tokens, camelCase with the token_id as id', async () => {
    const c = await client();
    const created = await c.tokens.create({
      ...tokenParams(),
      allowedIps: ['10.0.0.0/8'],
      rateLimit: { requests: 100, window: '1m' },
    });
    expect(created.id).toMatch(TOKEN_ID);
    expect(created.sanitizedKey).toMatch(SANITIZED);
    expect(created.authorizedOrigins).toEqual(['app.example.com', 'localhost']);
    expect(created.authorizedIps).toEqual(['10.0.0.0/8']);
    expect(created.rateLimit).toEqual({ requests: 100, window: '1m' });
    expect(created.targetProvider).toBe('openai');
    expect(created.realKeyRef).toMatch(/^key_/);
    expect(created.proxyBaseUrl).toBe(`${t.server.proxyUrl.replace('127.0.0.1', 'localhost')}/openai`);
    expect(created).not.toHaveProperty('token_id');
    expect(created).not.toHaveProperty('sanitized_key');

    const got = await c.tokens.get(created.id);
    expect(got).toEqual(Object.fromEntries(Object.entries(created).filter(([k]) => k !== 'sanitizedKey')));
    const page = await c.tokens.list();
    expect(page.data.map((x) => x.id)).toEqual([created.id]);
    expect(page.hasMore).toBe(false);
    expect(page.nextCursor).toBeNull();

    const revoked = await c.tokens.revoke(created.id);
    expect(revoked.status).toBe('revoked');
    expect(revoked.revokedAt).not.toBeNull();
    expect((await c.tokens.revoke(created.id)).revokedAt).toBe(revoked.revokedAt);
    expect((await c.tokens.list({ status: 'active' })).data).toEqual([]);
    expect((await c.tokens.list({ status: 'revoked' })).data.map((x) => x.id)).toEqual([created.id]);
  });

  it('creates, lists, gets, rotates and deletes keys; tokens can use a stored key', async () => {
    const c = await client();
    const key = await c.keys.create({
      name: 'prod',
      provider: 'openai',
      realKey: 'sk-prod-0123456789abcdefAAAA',
    });
    expect(key.id).toMatch(/^key_/);
    expect(key.hint).toBe('AAAA');
    const token = await c.tokens.create({
      name: 'x',
      provider: 'openai',
      keyId: key.id,
      allowedHosts: ['a.example'],
    });
    expect(token.realKeyRef).toBe(key.id);
    expect((await c.keys.get(key.id)).tokenCount).toBe(1);
    const rotated = await c.keys.rotate(key.id, { realKey: 'sk-prod-0123456789abcdefBBBB' });
    expect(rotated.hint).toBe('BBBB');
    expect(rotated.rotatedAt).not.toBeNull();
    expect((await c.keys.list()).data.map((k) => k.id)).toEqual([key.id]);
    const deleted = await c.keys.delete(key.id);
    expect(deleted.deletedAt).not.toBeNull();
    expect((await c.tokens.get(token.id)).status).toBe('revoked');
    const err = await c.keys.rotate(key.id, { realKey: 'sk-x-0123456789abcdef' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).code).toBe('key_deleted');
  });

  it('reads and updates the account and lists providers, logs and anomalies', async () => {
    const c = await client();
    const account = await c.account.get();
    expect(account.id).toMatch(/^acct_/);
    expect(account.plan).toBe('unlimited');
    expect(account.usage.activeTokens).toBe(0);
    const updated = await c.account.update({ name: 'renamed', alertEmail: 'ops@example.com' });
    expect(updated.name).toBe('renamed');
    expect(updated.alertEmail).toBe('ops@example.com');
    expect((await c.account.update({ alertEmail: null })).alertEmail).toBeNull();
    const providers = await c.providers.list();
    expect(providers.data.map((p) => p.id)).toContain('openai');
    expect(providers.data[0]).toHaveProperty('proxyBaseUrl');
    expect((await c.logs.list({ authorized: false })).data).toEqual([]);
    expect((await c.anomalies.list()).data).toEqual([]);
  });

  it('API keys: create (shown once) with a read-only scope, list, delete; the audit log names the key', async () => {
    const c = await client();
    const reader = await c.apiKeys.create({ name: 'dashboards', scope: 'read' });
    expect(reader).toMatchObject({ name: 'dashboards', scope: 'read' });
    expect(reader.id).toMatch(/^ak_/);
    expect(reader.apiKey).toMatch(/^svc_sk_/);
    const ops = await c.apiKeys.create({ name: 'ops' });
    expect(ops.scope).toBe('full');
    expect((await c.apiKeys.list()).data.map((k) => k.name)).toEqual(['ops', 'dashboards', 'default']);

    const readOnly = await client({ apiKey: reader.apiKey });
    expect((await readOnly.tokens.list()).data).toEqual([]);
    const refused = await readOnly.tokens.create(tokenParams()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PermissionError);
    expect((refused as PermissionError).code).toBe('insufficient_scope');

    const asOps = await client({ apiKey: ops.apiKey });
    const token = await asOps.tokens.create(tokenParams('audited'));
    const entries = (await c.audit.list({ objectId: token.id })).data;
    expect(entries).toEqual([
      expect.objectContaining({
        action: 'token.created',
        objectId: token.id,
        actor: { type: 'api_key', id: ops.id, name: 'ops' },
      }),
    ]);
    expect((await c.audit.list({ action: 'api_key.created' })).data.map((e) => e.objectId)).toEqual([
      ops.id,
      reader.id,
    ]);

    expect((await c.apiKeys.delete(reader.id)).id).toBe(reader.id);
    const gone = await (async () => {
      try {
        return await readOnly.tokens.list();
      } catch (err) {
        return err;
      }
    })();
    expect(gone).toBeInstanceOf(AuthenticationError);
  });

  it('edits a token, revokes all tokens (the kill switch) and reads usage', async () => {
    const c = await client();
    const a = await c.tokens.create(tokenParams('a'));
    const b = await c.tokens.create(tokenParams('b'));
    const edited = await c.tokens.update(a.id, {
      name: 'a2',
      allowedHosts: ['*.example.org'],
      rateLimit: { requests: 5, window: '1m' },
    });
    expect(edited).toMatchObject({ id: a.id, name: 'a2', authorizedOrigins: ['*.example.org'] });
    expect(edited.rateLimit).toEqual({ requests: 5, window: '1m' });
    expect((await c.tokens.update(a.id, { rateLimit: null })).rateLimit).toBeNull();
    const revoked = await c.tokens.revokeAll();
    expect(revoked.map((x) => x.id).sort()).toEqual([a.id, b.id].sort());
    expect(revoked.every((x) => x.status === 'revoked')).toBe(true);
    expect(await c.tokens.revokeAll()).toEqual([]);
    const usage = await c.usage.get({ window: '24h', bucket: '1h' });
    expect(usage.buckets).toHaveLength(24);
    expect(usage.forwarded).toBe(0);
    expect(usage.refusedByReason).toHaveProperty('originOrIpNotAllowed', 0);
    expect(usage.spend).toMatchObject({ requests: 0, costMicros: 0, byToken: [], byModel: [] });
  });

  it('sets budgets on tokens and the account, and reads spend against them', async () => {
    const c = await client();
    const t = await c.tokens.create({
      ...tokenParams('budgeted'),
      budget: { amountUsd: 20, period: 'month' },
    });
    expect(t.budget).toEqual({ amountUsd: 20, period: 'month' });
    const changed = await c.tokens.update(t.id, { budget: { tokens: 2_000_000, period: 'day' } });
    expect(changed.budget).toEqual({ tokens: 2_000_000, period: 'day' });
    const account = await c.account.update({ budget: { amountUsd: 100, period: 'total' } });
    expect(account.budget).toEqual({ amountUsd: 100, period: 'total' });
    const usage = await c.usage.get();
    expect(usage.budgets).toContainEqual(
      expect.objectContaining({ scope: 'token', tokenId: t.id, unit: 'tokens', limit: 2_000_000, used: 0 }),
    );
    expect(usage.budgets).toContainEqual(
      expect.objectContaining({ scope: 'account', tokenId: null, unit: 'usd', limit: 100, resetsAt: null }),
    );
    expect((await c.tokens.update(t.id, { budget: null })).budget).toBeNull();
    expect((await c.account.update({ budget: null })).budget).toBeNull();
    await c.tokens.revoke(t.id);
  });

  it('pages: the first page has data, hasMore and nextCursor; for await walks every page', async () => {
    const c = await client();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.unshift((await c.tokens.create(tokenParams(`t${i}`))).id);
    const first = await c.tokens.list({ limit: 2 });
    expect(first.data.map((x) => x.id)).toEqual(ids.slice(0, 2));
    expect(first.hasMore).toBe(true);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await first.nextPage();
    expect(second?.data.map((x) => x.id)).toEqual(ids.slice(2, 4));

    const all: string[] = [];
    for await (const token of c.tokens.list({ limit: 2 })) all.push(token.id);
    expect(all).toEqual(ids);
    const fromPage: string[] = [];
    for await (const token of first) fromPage.push(token.id);
    expect(fromPage).toEqual(ids);
  });
});
