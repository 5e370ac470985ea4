import { afterEach, beforeAll, beforeEach, expect } from 'vitest';
import type { ApiHarness, ApiResponse } from '../support/api-harness.js';
import type { DatabaseFixture } from '../support/databases.js';
import { createKey, newClient, ok, snapshot, tokenBody, type Client } from './helpers.js';
import { useApiHarness } from './use-api-harness.js';

/**
 * Bad input gets a clear error naming the problem, and changes nothing: every refused request in the
 * bad-input-*.test.ts files is followed by a check that the account's tokens and keys are exactly as
 * before.
 */
export interface BadInputSuite {
  readonly h: ApiHarness;
  /** The account the bad requests go to; checked unchanged after every test. */
  readonly c: Client;
  /** Another account, for the requests that are meant to succeed. */
  readonly maker: Client;
  /** POST /v1/tokens as `c`. */
  readonly post: (body: unknown) => Promise<ApiResponse>;
  /** POST /v1/tokens as `maker`. */
  readonly make: (body: unknown) => Promise<ApiResponse>;
  /** POST /v1/tokens as `c` with a raw body. */
  readonly postRaw: (raw: string, contentType?: string) => Promise<ApiResponse>;
}

/**
 * Sets up the calling `describe`: a harness on `fixture`, the accounts `c` (holding a key and a token
 * that a bad request could disturb) and `maker`, and the check after each test that `c` is untouched.
 * The harness and clients returned are filled in by `beforeAll`, so the tests can hold them from the start.
 */
export function useBadInputSuite(fixture: DatabaseFixture): BadInputSuite {
  const h = useApiHarness(fixture);
  const c = {} as Client;
  const maker = {} as Client;
  let before: Awaited<ReturnType<typeof snapshot>>;

  beforeAll(async () => {
    Object.assign(c, await newClient(h, 'unlimited', 'bad-input'));
    Object.assign(maker, await newClient(h, 'unlimited', 'maker'));
    // Some state that a bad request could disturb.
    await createKey(c);
    ok(await c.request('POST', '/v1/tokens', { body: tokenBody() }), 201);
  });
  beforeEach(async () => {
    before = await snapshot(h, c.accountId);
  });
  afterEach(async () => {
    // Requests that are meant to succeed go through `maker`, another account: `c` must be untouched.
    expect(await snapshot(h, c.accountId)).toEqual(before);
  });

  const post = (body: unknown): Promise<ApiResponse> => c.request('POST', '/v1/tokens', { body });
  const make = (body: unknown): Promise<ApiResponse> => maker.request('POST', '/v1/tokens', { body });
  const postRaw = (raw: string, contentType = 'application/json'): Promise<ApiResponse> =>
    c.request('POST', '/v1/tokens', { raw, headers: { 'content-type': contentType } });

  return { h, c, maker, post, make, postRaw };
}
