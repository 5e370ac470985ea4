import { describe, expect, it } from 'vitest';
import { RouteMethods } from '../../src/api/allowed-methods.js';

describe('RouteMethods: the methods a path answers to (405 Allow)', () => {
  const routes = new RouteMethods();
  routes.add('GET', '/v1/tokens');
  routes.add('HEAD', '/v1/tokens');
  routes.add('POST', '/v1/tokens');
  routes.add(['GET', 'HEAD'], '/v1/tokens/:id');
  routes.add('DELETE', '/v1/tokens/:id');
  routes.add('POST', '/v1/keys/:id/rotate');
  routes.add('GET', '/v1/open.api+json');

  it.each([
    ['/v1/tokens', ['GET', 'HEAD', 'POST']],
    ['/v1/tokens/tok_1', ['DELETE', 'GET', 'HEAD']],
    ['/v1/keys/key_1/rotate', ['POST']],
    ['/v1/tokens/a/b', []],
    ['/v1/tokens/', []],
    ['/v1/nothing', []],
    // Registered paths are literal text, not patterns.
    ['/v1/openXapi+json', []],
    ['/v1/open.api+json', ['GET']],
  ])('%s → %j', (path, allowed) => {
    expect(routes.allowed(path)).toEqual(allowed);
  });
});
