import { describe, expect, it } from 'vitest';
import { relayedHeaders, tokenFrom, upstreamHeaders } from '../../src/proxy/headers.js';
import { parseTarget, upstreamPath } from '../../src/proxy/route.js';

describe('parseTarget', () => {
  it.each([
    [
      '/openai/v1/chat/completions',
      { providerId: 'openai', path: '/openai/v1/chat/completions', suffix: '/v1/chat/completions' },
    ],
    [
      '/openai/v1/models?limit=2&x=%20',
      { providerId: 'openai', path: '/openai/v1/models', suffix: '/v1/models?limit=2&x=%20' },
    ],
    ['/openai', { providerId: 'openai', path: '/openai', suffix: '' }],
    ['/openai?x=1', { providerId: 'openai', path: '/openai', suffix: '?x=1' }],
    [
      '/openai//evil.example/x',
      { providerId: 'openai', path: '/openai//evil.example/x', suffix: '//evil.example/x' },
    ],
    [
      'https://evil.example/openai/v1/models',
      { providerId: 'openai', path: '/openai/v1/models', suffix: '/v1/models' },
    ],
    ['HTTP://evil.example/anthropic/v1', { providerId: 'anthropic', path: '/anthropic/v1', suffix: '/v1' }],
  ])('%s', (raw, expected) => {
    expect(parseTarget(raw)).toEqual(expected);
  });

  it.each([
    '',
    '/',
    '//evil.example/x',
    '/?x=1',
    '*',
    'evil.example:443',
    'https://evil.example',
    'ftp://x/openai/',
  ])('no provider segment in %j', (raw) => {
    expect(parseTarget(raw)).toBeUndefined();
  });

  it('leaves dot segments to the path guard: the target is parsed as is', () => {
    expect(parseTarget('/openai/../admin')).toEqual({
      providerId: 'openai',
      path: '/openai/../admin',
      suffix: '/../admin',
    });
  });

  it('joins base path and suffix into an origin-form path', () => {
    expect(upstreamPath('', '/v1/models')).toBe('/v1/models');
    expect(upstreamPath('', '')).toBe('/');
    expect(upstreamPath('', '?x=1')).toBe('/?x=1');
    expect(upstreamPath('/compat', '/v1?x')).toBe('/compat/v1?x');
    expect(upstreamPath('', '//evil.example/x')).toBe('//evil.example/x');
  });
});

describe('tokenFrom', () => {
  it.each([
    ['Bearer svc_hb_x', undefined, 'svc_hb_x'],
    ['bearer svc_hb_x ', undefined, 'svc_hb_x'],
    ['Basic abc', undefined, ''],
    ['Bearer', undefined, ''],
    [undefined, 'svc_hb_y', 'svc_hb_y'],
    [undefined, ['a', 'b'], ''],
    [undefined, undefined, null],
    ['', undefined, null],
    ['Bearer svc_hb_x', 'svc_hb_y', 'svc_hb_x'],
  ] as const)('%j / %j', (authorization, header, expected) => {
    expect(tokenFrom(authorization, header as string | string[] | undefined)).toBe(expected);
  });
});

describe('upstreamHeaders', () => {
  it('drops credentials, hop-by-hop, forwarding and Connection-named headers; sets the key', () => {
    const raw = [
      'Host',
      'localhost',
      'Authorization',
      'Bearer svc',
      'X-Api-Key',
      'k',
      'Cookie',
      'c',
      'Origin',
      'o',
      'Referer',
      'r',
      'X-Forwarded-Host',
      'h',
      'X-Forwarded-For',
      'f',
      'Forwarded',
      'x',
      'X-Real-IP',
      'i',
      'Connection',
      'keep-alive, X-Hop',
      'X-Hop',
      '1',
      'Keep-Alive',
      '5',
      'TE',
      'trailers',
      'Upgrade',
      'h2c',
      'Proxy-Foo',
      'p',
      'Expect',
      '100-continue',
      'Accept-Encoding',
      'gzip',
      'Content-Type',
      'application/json',
      'Content-Length',
      '2',
      'X-Dup',
      'a',
      'X-Dup',
      'b',
    ];
    expect(upstreamHeaders(raw, 'keep-alive, X-Hop', 'x-api-key', 'REAL')).toEqual([
      'Content-Type',
      'application/json',
      'Content-Length',
      '2',
      'X-Dup',
      'a',
      'X-Dup',
      'b',
      'x-api-key',
      'REAL',
      'accept-encoding',
      'identity',
    ]);
  });

  it("drops a custom provider's own key header, which may carry the caller's token", () => {
    const raw = ['X-Acme-Key', 'svc_hb_token', 'Content-Type', 'application/json'];
    expect(upstreamHeaders(raw, undefined, 'x-acme-key', 'REAL')).toEqual([
      'Content-Type',
      'application/json',
      'x-acme-key',
      'REAL',
      'accept-encoding',
      'identity',
    ]);
  });
});

describe('relayedHeaders', () => {
  const secrets = { shortest: 1000, texts: [] };
  it("drops the provider's hop-by-hop, Connection-named, HSTS and alt-svc headers; keeps the rest", () => {
    const out = relayedHeaders(
      {
        connection: 'x-hop, close',
        'x-hop': '1',
        'keep-alive': 'timeout=5',
        'strict-transport-security': 'max-age=31536000; includeSubDomains; preload',
        'alt-svc': 'h3=":443"; ma=86400',
        'content-length': '12',
        'content-type': 'application/json',
        'openai-processing-ms': '12',
        'x-request-id': 'req_provider',
      },
      true,
      secrets,
      undefined,
      'req_ours',
      null,
    );
    expect(out).toEqual([
      'content-type',
      'application/json',
      'openai-processing-ms',
      '12',
      'x-request-id',
      'req_provider',
      'x-tokenproxy-request-id',
      'req_ours',
    ]);
  });
});
