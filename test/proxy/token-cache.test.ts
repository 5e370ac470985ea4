import { describe, expect, it } from 'vitest';
import { TokenCache, TOKEN_CACHE_TTL_MS } from '../../src/proxy/token-cache.js';
import type { TokenRecord } from '../../src/store/records.js';
import type { TokenWithKey } from '../../src/store/store.js';

function record(id: string, origins: string[] = ['app.example.com']): TokenWithKey {
  const token: TokenRecord = {
    id,
    accountId: 'acct_x',
    name: 't',
    provider: 'openai',
    keyId: 'key_x',
    digest: 'd',
    hint: 'h',
    authorizedOrigins: origins,
    authorizedIps: [],
    rateLimit: null,
    status: 'active',
    createdAt: '2026-01-01T00:00:00.000Z',
    lastUsedAt: null,
    expiresAt: null,
    revokedAt: null,
    requestCount: 0,
  };
  return { token, ciphertext: Buffer.from('c') };
}

describe('TokenCache', () => {
  it('serves cached lookups (positive and negative) synchronously for at most the TTL', async () => {
    let now = 1000;
    let calls = 0;
    const cache = new TokenCache(
      (digest) => {
        calls++;
        return Promise.resolve(digest === 'known' ? record('t1') : undefined);
      },
      () => now,
    );
    expect(await cache.get('known')).not.toBeNull();
    expect(await cache.get('unknown')).toBeNull();
    expect(calls).toBe(2);
    const hit = cache.get('known');
    expect(hit).not.toBeInstanceOf(Promise);
    expect(cache.get('unknown')).toBeNull();
    expect(calls).toBe(2);
    now += TOKEN_CACHE_TTL_MS;
    await cache.get('known');
    expect(calls).toBe(3);
  });

  it('shares one query between concurrent lookups', async () => {
    let calls = 0;
    const cache = new TokenCache(
      () => {
        calls++;
        return Promise.resolve(record('t1'));
      },
      () => 0,
    );
    await Promise.all([cache.get('a'), cache.get('a'), cache.get('a')]);
    expect(calls).toBe(1);
  });

  it('clear() makes the next lookup read the store, even with a query in flight', async () => {
    const releases: ((v: TokenWithKey | undefined) => void)[] = [];
    let calls = 0;
    const cache = new TokenCache(
      () => {
        calls++;
        return new Promise((resolve) => void releases.push(resolve));
      },
      () => 0,
    );
    const first = cache.get('a');
    cache.clear();
    const second = cache.get('a');
    expect(calls).toBe(2);
    for (const release of releases) release(record('t2'));
    await second;
    await first;
    expect(cache.get('a')).not.toBeInstanceOf(Promise);
  });

  it('does not cache store errors', async () => {
    let fail = true;
    const cache = new TokenCache(
      () => (fail ? Promise.reject(new Error('down')) : Promise.resolve(undefined)),
      () => 0,
    );
    await expect(cache.get('a')).rejects.toThrow('down');
    fail = false;
    expect(await cache.get('a')).toBeNull();
  });

  it('keeps compiled matchers across refreshes of the same token', async () => {
    let now = 0;
    const cache = new TokenCache(
      () => Promise.resolve(record('t1')),
      () => now,
    );
    const a = await cache.get('a');
    now += 5000;
    const b = await cache.get('a');
    expect(a?.origins).toBe(b?.origins);
    expect(a?.origins.matches('https://app.example.com')).toBe(true);
    expect(a?.ips).toBeNull();
  });
});
