import type { FastifyRequest } from 'fastify';
import type { Vault } from '../vault/vault.js';
import { TokenProxyError } from '../errors/tokenproxy-error.js';
import type { ApiDeps, ApiServer } from './context.js';

/** How long a key holds its first answer. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * An unfinished first request older than this is taken to have died with its process. Management
 * calls finish in milliseconds; without it a crash would block the key for 24 hours.
 */
const STALE_AFTER_MS = 60 * 1000;
const PURGE_EVERY_MS = 60 * 60 * 1000;
const HEADER = 'idempotency-key';
const KEY_PATTERN = /^[\x21-\x7E]{1,255}$/;
/** The methods that take the header (GET and PATCH repeat safely without it). */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['POST', 'DELETE']);

interface Claim {
  readonly accountId: string;
  readonly key: string;
}

/**
 * `Idempotency-Key` on the POST and DELETE routes of /v1: the same key from the same account for the
 * same request (method, path, query and body) returns the first answer (status and body) without
 * doing the work again, for 24 h. Only requests that passed validation claim a key; 5xx answers
 * release it so a retry does the work. DELETE takes one because deleting a webhook or an API key
 * twice answers 404: a client retrying after a lost answer would report a failure for a delete that
 * happened.
 *
 * Stored bodies are sealed with the vault: a token creation's body holds the sanitized token, and
 * a retried create after a dropped connection must still hand it to the caller (docs/decisions.md).
 */
export function registerIdempotency(api: ApiServer, deps: ApiDeps): void {
  const claims = new WeakMap<FastifyRequest, Claim>();
  let nextPurge = 0;

  api.addHook('preHandler', async (request, reply) => {
    if (!IDEMPOTENT_METHODS.has(request.method)) return;
    const header = request.headers[HEADER];
    if (header === undefined) return;
    const key = Array.isArray(header) ? undefined : header;
    // Sign-in (POST /v1/session) has no account until its handler verifies the key, and a session
    // is not an answer to replay: there the header is ignored, as on any route without an account.
    if (request.account === null) return;
    if (key === undefined || !KEY_PATTERN.test(key)) {
      throw new TokenProxyError(
        'invalid_parameter',
        'Invalid header "Idempotency-Key": send one value of 1 to 255 printable ASCII characters, such as a UUID.',
        { param: 'Idempotency-Key' },
      );
    }
    const accountId = request.account.id;
    const now = deps.now();
    purgeNowAndThen(now);
    const begun = await deps.store.idempotency.begin({
      accountId,
      key,
      fingerprint: await requestFingerprint(deps.vault, request.method, request.url, request.body),
      now: now.toISOString(),
      expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString(),
      staleBefore: new Date(now.getTime() - STALE_AFTER_MS).toISOString(),
    });
    switch (begun.state) {
      case 'started':
        claims.set(request, { accountId, key });
        return;
      case 'mismatch':
        throw new TokenProxyError(
          'idempotency_conflict',
          'This Idempotency-Key was already used for a different request (another method, path, query or body) in the last 24 hours. Use a new key for a new request.',
          { param: 'Idempotency-Key' },
        );
      case 'in_flight':
        throw new TokenProxyError(
          'idempotency_in_progress',
          'The first request with this Idempotency-Key is still being processed. Retry shortly with the same key.',
          { param: 'Idempotency-Key', headers: { 'retry-after': '1' } },
        );
      case 'completed': {
        const plaintext = await deps.vault.decrypt(begun.body, replayBinding(accountId, key));
        const body = plaintext.toString('utf8');
        plaintext.fill(0);
        return reply
          .code(begun.status)
          .header('idempotent-replayed', 'true')
          .type('application/json; charset=utf-8')
          .send(body);
      }
    }
  });

  api.addHook('onSend', async (request, reply, payload) => {
    const claim = claims.get(request);
    if (claim === undefined) return payload;
    claims.delete(request);
    try {
      if (reply.statusCode < 500 && typeof payload === 'string') {
        const plaintext = Buffer.from(payload, 'utf8');
        const sealed = await deps.vault.encrypt(plaintext, replayBinding(claim.accountId, claim.key));
        plaintext.fill(0);
        await deps.store.idempotency.complete(claim.accountId, claim.key, reply.statusCode, sealed);
      } else {
        await deps.store.idempotency.release(claim.accountId, claim.key);
      }
    } catch (err) {
      // The answer itself is fine; only its replay is lost. A retry then finds a stale claim or none.
      request.log.warn(
        { err: err instanceof Error ? err.message : 'non-error' },
        'idempotency record failed',
      );
    }
    return payload;
  });

  api.addHook('onResponse', async (request) => {
    // onSend was never reached (the request died on the way): free the key for the retry.
    const claim = claims.get(request);
    if (claim === undefined) return;
    claims.delete(request);
    await deps.store.idempotency.release(claim.accountId, claim.key).catch(() => undefined);
  });

  function purgeNowAndThen(now: Date): void {
    if (now.getTime() < nextPurge) return;
    nextPurge = now.getTime() + PURGE_EVERY_MS;
    deps.store.idempotency.purgeExpired(now.toISOString()).catch(() => undefined);
  }
}

export function replayBinding(accountId: string, key: string) {
  return { keyId: `idempotency:${key}`, accountId };
}

/**
 * Method, path, query and body, with query parameters and object keys sorted, so their order does not
 * matter. The query counts: `POST /v1/events/:id/redeliver?webhook_id=` names the endpoint, and a key
 * reused for another endpoint must be a conflict, not the first endpoint's answer. Keyed (not a plain
 * hash): the body may hold a real key, and a stored plain hash would let anyone with the database
 * confirm a guessed one.
 */
export function requestFingerprint(
  vault: Pick<Vault, 'mac'>,
  method: string,
  url: string,
  body: unknown,
): Promise<string> {
  return vault.mac('idempotency-fingerprint', fingerprintText(method, url, body));
}

/** The text `requestFingerprint` MACs (exported for its table test). */
export function fingerprintText(method: string, url: string, body: unknown): string {
  const at = url.indexOf('?');
  const path = at === -1 ? url : url.slice(0, at);
  const query = at === -1 ? [] : [...new URLSearchParams(url.slice(at + 1))].sort(byName);
  const head = query.length === 0 ? `${method} ${path}` : `${method} ${path}?${JSON.stringify(query)}`;
  // Without a query the text is what it was before queries counted, so the records stored by an
  // earlier version still match their retries after an upgrade.
  return `${head}\n${JSON.stringify(canonical(body))}`;
}

function byName([a, av]: [string, string], [b, bv]: [string, string]): number {
  if (a !== b) return a < b ? -1 : 1;
  return av < bv ? -1 : av > bv ? 1 : 0;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return Object.fromEntries(entries.map(([k, v]) => [k, canonical(v)]));
  }
  return value;
}
