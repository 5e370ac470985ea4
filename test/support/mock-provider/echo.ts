import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { headerValue, sendError, sendJson, startSse, write, type Ctx } from './respond.js';

// Routes that send back what the proxy forwarded, so tests see the real key's redaction from outside.

export function echoAuth(ctx: Ctx): Promise<void> {
  const authorization = headerValue(ctx.req, 'authorization') ?? null;
  const apiKey = headerValue(ctx.req, 'x-api-key') ?? null;
  const googKey = headerValue(ctx.req, 'x-goog-api-key') ?? null;
  // Echo credentials in headers as well as the body: the proxy must redact the real key in both places.
  const headers: Record<string, string> = {};
  if (authorization !== null) headers['x-echo-authorization'] = authorization;
  if (apiKey !== null) headers['x-echo-x-api-key'] = apiKey;
  if (googKey !== null) headers['x-echo-x-goog-api-key'] = googKey;
  sendJson(ctx.res, 200, { authorization, 'x-api-key': apiKey, 'x-goog-api-key': googKey }, headers);
  return Promise.resolve();
}

/** The credential the proxy forwarded: the bearer token, or `x-api-key`. */
function receivedKey(ctx: Ctx): string {
  const auth = headerValue(ctx.req, 'authorization') ?? '';
  return auth.startsWith('Bearer ') ? auth.slice(7) : (headerValue(ctx.req, 'x-api-key') ?? '');
}

/** How `/echo-key-encoded?as=` encodes the text it echoes (key inside a longer text, as a dump would). */
export const MOCK_KEY_ENCODINGS: Readonly<Record<string, (text: string) => string>> = {
  base64: (t) => Buffer.from(t).toString('base64'),
  base64url: (t) => Buffer.from(t).toString('base64url'),
  hex: (t) => Buffer.from(t).toString('hex'),
  HEX: (t) => Buffer.from(t).toString('hex').toUpperCase(),
  url: (t) => encodeURIComponent(t),
  'json-slash': (t) => JSON.stringify(t).slice(1, -1).replaceAll('/', '\\/'),
  'json-u': (t) => t.replace(/[^A-Za-z0-9]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
};

/**
 * Echoes the credential it received (bearer or x-api-key), encoded as `?as=` names, in a header and
 * in the body; with `?sse=1` as an event stream written 3 characters per chunk, so that the encoded
 * key crosses many chunk boundaries.
 */
export async function echoKeyEncoded(ctx: Ctx): Promise<void> {
  const key = receivedKey(ctx);
  const encode = MOCK_KEY_ENCODINGS[ctx.url.searchParams.get('as') ?? ''];
  if (encode === undefined) return sendError(ctx.res, 400, 'unknown ?as= encoding');
  const encoded = encode(`{"debug":{"api_key":"${key}","n":1}}`);
  // Written as is (the encodings need no JSON escaping), so the body holds exactly the encoded form.
  const json = `{"dump":"${encoded}"}`;
  if (ctx.url.searchParams.get('sse') !== '1') {
    ctx.res.writeHead(200, { 'content-type': 'application/json', 'x-echo-encoded': encoded });
    ctx.res.end(json);
    return;
  }
  startSse(ctx.res, { 'x-echo-encoded': encoded });
  const event = `data: ${json}\n\n`;
  for (let at = 0; at < event.length; at += 3) await write(ctx.res, event.slice(at, at + 3));
  ctx.res.end();
}

/**
 * A completion whose `model` is the credential it received, as a provider that echoes what it was
 * given in place of a model name might answer; with `?sse=1` as a stream of two events, 3 characters
 * per chunk. What the proxy records from the answer must not hold the key either.
 */
export async function echoKeyAsModel(ctx: Ctx): Promise<void> {
  const key = receivedKey(ctx);
  const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
  const completion = { id: 'chatcmpl-echo', object: 'chat.completion', model: key, usage };
  if (ctx.url.searchParams.get('sse') !== '1') {
    sendJson(ctx.res, 200, completion);
    return;
  }
  startSse(ctx.res);
  const events =
    `data: ${JSON.stringify({ id: 'chatcmpl-echo', object: 'chat.completion.chunk', model: key, choices: [] })}\n\n` +
    `data: ${JSON.stringify({ id: 'chatcmpl-echo', object: 'chat.completion.chunk', model: key, choices: [], usage })}\n\n` +
    'data: [DONE]\n\n';
  for (let at = 0; at < events.length; at += 3) await write(ctx.res, events.slice(at, at + 3));
  ctx.res.end();
}

/** How `/echo-key-compressed?enc=` compresses, as a provider ignoring `accept-encoding: identity` would. */
export const MOCK_COMPRESSIONS: Readonly<Record<string, (data: Buffer) => Buffer>> = {
  gzip: (d) => gzipSync(d),
  deflate: (d) => deflateSync(d),
  br: (d) => brotliCompressSync(d),
  zstd: (d) => zstdCompressSync(d),
};

/** The text `/echo-key-compressed` compresses: the key inside, `repeat` times (for a long answer). */
export function compressedEchoText(key: string, repeat: number): string {
  return `{"error":{"message":"Incorrect API key provided: ${key}"},"pad":"${'x'.repeat(64)}"}\n`.repeat(
    repeat,
  );
}

/**
 * Echoes the credential in a body compressed with `?enc=` (a chain such as `gzip,br` too; or, for
 * `?enc=broken`, a gzip header and
 * then bytes that do not decode), whatever the request asked for, written 7 bytes per chunk so the
 * compressed stream crosses many chunks; `?repeat=N` repeats the text, `?as=` sets another
 * `content-encoding` on an uncompressed body.
 */
export async function echoKeyCompressed(ctx: Ctx): Promise<void> {
  const key = receivedKey(ctx);
  const enc = ctx.url.searchParams.get('enc') ?? '';
  const repeat = Number(ctx.url.searchParams.get('repeat') ?? '1');
  const text = Buffer.from(compressedEchoText(key, repeat));
  let body: Buffer;
  let encoding = enc;
  if (enc === 'broken') {
    body = Buffer.concat([gzipSync(text).subarray(0, 10), Buffer.from('this is not deflate data at all')]);
    encoding = 'gzip';
  } else if (enc === 'none') {
    body = text;
    encoding = ctx.url.searchParams.get('as') ?? 'identity';
  } else {
    // A chain (`gzip,br`) is applied in the order given, as `content-encoding` lists it.
    body = text;
    for (const step of enc.split(',')) {
      const compress = MOCK_COMPRESSIONS[step];
      if (compress === undefined) return sendError(ctx.res, 400, 'unknown ?enc= compression');
      body = compress(body);
    }
    encoding = enc.split(',').join(', ');
  }
  ctx.res.writeHead(401, { 'content-type': 'application/json', 'content-encoding': encoding });
  for (let at = 0; at < body.length; at += 7) await write(ctx.res, body.subarray(at, at + 7));
  ctx.res.end();
}

export function echoBody(ctx: Ctx): Promise<void> {
  ctx.res.writeHead(200, {
    'content-type': headerValue(ctx.req, 'content-type') ?? 'application/octet-stream',
    'content-length': String(ctx.body.length),
  });
  ctx.res.end(ctx.body);
  return Promise.resolve();
}
