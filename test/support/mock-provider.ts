import { once } from 'node:events';
import { createServer } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestCa } from './test-ca.js';

export interface MockProviderOptions {
  /** Number of streamed content chunks (SSE events) per streaming answer; request header `x-mock-chunks` wins. */
  chunks?: number;
  /** Delay between streamed chunks; request header `x-mock-gap-ms` wins. */
  gapMs?: number;
}

export interface ReceivedRequest {
  method: string;
  /** Request target as received: path plus query string. */
  path: string;
  /** Node's parsed headers: lower-case names, duplicates merged (or arrays for `set-cookie`). */
  headers: IncomingHttpHeaders;
  /** Flat `[name, value, name, value, …]` list exactly as on the wire, so duplicates stay visible. */
  rawHeaders: string[];
  body: Buffer;
  /** `Date.now()` when the request head arrived. */
  receivedAt: number;
}

export interface MockProvider {
  /** `https://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  port: number;
  caCertPem: string;
  received: ReceivedRequest[];
  /** Forgets recorded requests (the array is emptied in place, so references stay valid). */
  reset(): void;
  /** Resolves once at least `count` requests have been recorded since the last reset. */
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Stops the server and destroys every socket, including ones mid-stream. Idempotent. */
  close(): Promise<void>;
}

export const MOCK_CHAT_MODEL = 'gpt-mock-1';
export const MOCK_ANTHROPIC_MODEL = 'claude-mock-1';
/** Content of the non-streaming chat and messages answers. */
export const MOCK_COMPLETION_TEXT =
  'This is a canned answer from the tokenproxy mock provider. It is long enough to look like a real ' +
  'completion, so that proxies which truncate or buffer bodies are caught by the tests.';

/** Text piece carried by streamed chunk `index` (0-based); joining all pieces gives `mockStreamText(n)`. */
export function mockStreamPiece(index: number): string {
  return `tok${index} `;
}

export function mockStreamText(chunks: number): string {
  return Array.from({ length: chunks }, (_, i) => mockStreamPiece(i)).join('');
}

/** Byte at offset `i` of a `/big` body: a repeating a–z pattern, so truncation or reordering is detectable. */
export function mockBigByte(i: number): number {
  return 97 + (i % 26);
}

const DEFAULT_CHUNKS = 5;
const DEFAULT_GAP_MS = 50;

interface Route {
  pattern: RegExp;
  handle(ctx: Ctx, match: RegExpExecArray): Promise<void>;
}

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  body: Buffer;
  chunks: number;
  gapMs: number;
  tcpSockets(): Socket[];
  /** Aborted when the client goes away or the server closes, so pending waits end instead of leaking timers. */
  signal: AbortSignal;
}

function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = Buffer.from(JSON.stringify(value));
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(payload.length),
    ...headers,
  });
  res.end(payload);
}

function errorType(status: number): string {
  const types: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    500: 'api_error',
    503: 'overloaded_error',
    529: 'overloaded_error',
  };
  return types[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  // Both the OpenAI and the Anthropic SDK read `error.message` from this shape.
  sendJson(res, status, { error: { message, type: errorType(status) } }, headers);
}

function parseJsonObject(body: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function intParam(value: string | null | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === null || value === undefined || value === '') return fallback;
  const n = Number(value);
  return Number.isInteger(n) && n >= 0 ? Math.min(n, max) : fallback;
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Resolves once `chunk` is handed to the socket, so an SSE event really leaves before the next wait. */
function write(res: ServerResponse, chunk: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    res.write(chunk, (err) => (err ? reject(err) : resolve()));
  });
}

function startSse(res: ServerResponse, headers: Record<string, string> = {}): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    ...headers,
  });
  res.flushHeaders();
}

function randomId(prefix: string): string {
  return `${prefix}${Math.random().toString(36).slice(2, 14)}`;
}

const openaiRateLimitHeaders = {
  'x-ratelimit-limit-requests': '10000',
  'x-ratelimit-remaining-requests': '9999',
  'x-ratelimit-reset-requests': '6ms',
  'x-request-id': 'req_mock',
};

const anthropicRateLimitHeaders = {
  'anthropic-ratelimit-requests-limit': '4000',
  'anthropic-ratelimit-requests-remaining': '3999',
  'request-id': 'req_mock',
};

async function chatCompletions(ctx: Ctx): Promise<void> {
  const { req, res } = ctx;
  if (req.method !== 'POST') return sendError(res, 405, `Method ${req.method ?? ''} not allowed`);
  const body = parseJsonObject(ctx.body);
  if (!body) return sendError(res, 400, 'Request body must be a JSON object');
  const model = typeof body.model === 'string' ? body.model : MOCK_CHAT_MODEL;
  const id = randomId('chatcmpl-mock');
  const created = Math.floor(Date.now() / 1000);

  if (body.stream !== true) {
    const promptTokens = Math.max(1, Math.ceil(ctx.body.length / 4));
    const completionTokens = Math.ceil(MOCK_COMPLETION_TEXT.length / 4);
    return sendJson(
      res,
      200,
      {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: MOCK_COMPLETION_TEXT, refusal: null, annotations: [] },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
        service_tier: 'default',
        system_fingerprint: 'fp_mock',
      },
      openaiRateLimitHeaders,
    );
  }

  const streamOptions = body.stream_options;
  const includeUsage =
    typeof streamOptions === 'object' &&
    streamOptions !== null &&
    (streamOptions as Record<string, unknown>).include_usage === true;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_mock', choices, ...extra })}\n\n`;

  startSse(res, openaiRateLimitHeaders);
  for (let i = 0; i < ctx.chunks; i++) {
    if (i > 0) await sleep(ctx.gapMs, undefined, { signal: ctx.signal });
    const last = i === ctx.chunks - 1;
    const delta =
      i === 0 ? { role: 'assistant', content: mockStreamPiece(i) } : { content: mockStreamPiece(i) };
    await write(
      res,
      chunk(
        [{ index: 0, delta, logprobs: null, finish_reason: last ? 'stop' : null }],
        includeUsage ? { usage: null } : {},
      ),
    );
  }
  if (includeUsage) {
    await write(
      res,
      chunk([], {
        usage: { prompt_tokens: 10, completion_tokens: ctx.chunks, total_tokens: 10 + ctx.chunks },
      }),
    );
  }
  res.end('data: [DONE]\n\n');
}

async function anthropicMessages(ctx: Ctx): Promise<void> {
  const { req, res } = ctx;
  if (req.method !== 'POST') return sendError(res, 405, `Method ${req.method ?? ''} not allowed`);
  const body = parseJsonObject(ctx.body);
  if (!body) return sendError(res, 400, 'Request body must be a JSON object');
  const model = typeof body.model === 'string' ? body.model : MOCK_ANTHROPIC_MODEL;
  const id = randomId('msg_mock');
  const inputTokens = Math.max(1, Math.ceil(ctx.body.length / 4));

  if (body.stream !== true) {
    return sendJson(
      res,
      200,
      {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [{ type: 'text', text: MOCK_COMPLETION_TEXT }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: inputTokens, output_tokens: Math.ceil(MOCK_COMPLETION_TEXT.length / 4) },
      },
      anthropicRateLimitHeaders,
    );
  }

  const event = (type: string, data: Record<string, unknown>): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

  startSse(res, anthropicRateLimitHeaders);
  await write(
    res,
    event('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: inputTokens, output_tokens: 1 },
      },
    }) +
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
      event('ping', {}),
  );
  for (let i = 0; i < ctx.chunks; i++) {
    if (i > 0) await sleep(ctx.gapMs, undefined, { signal: ctx.signal });
    await write(
      res,
      event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: mockStreamPiece(i) } }),
    );
  }
  res.end(
    event('content_block_stop', { index: 0 }) +
      event('message_delta', {
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: ctx.chunks },
      }) +
      event('message_stop', {}),
  );
}

function models(ctx: Ctx): Promise<void> {
  if (ctx.req.method !== 'GET') {
    sendError(ctx.res, 405, `Method ${ctx.req.method ?? ''} not allowed`);
    return Promise.resolve();
  }
  const created = 1_700_000_000;
  sendJson(
    ctx.res,
    200,
    {
      object: 'list',
      data: [MOCK_CHAT_MODEL, 'gpt-mock-2', 'text-embedding-mock'].map((id) => ({
        id,
        object: 'model',
        created,
        owned_by: 'tokenproxy-mock',
      })),
    },
    openaiRateLimitHeaders,
  );
  return Promise.resolve();
}

function echoAuth(ctx: Ctx): Promise<void> {
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
async function echoKeyEncoded(ctx: Ctx): Promise<void> {
  const auth = headerValue(ctx.req, 'authorization') ?? '';
  const key = auth.startsWith('Bearer ') ? auth.slice(7) : (headerValue(ctx.req, 'x-api-key') ?? '');
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

/** Canned answers that say usage, in the providers' shapes, for `/usage-split`. */
export interface MockUsageAnswer {
  readonly contentType: string;
  readonly body: string;
  readonly model: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

const sseData = (events: readonly unknown[]): string =>
  events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
const sseEvent = (type: string, data: unknown): string => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

export const MOCK_USAGE_ANSWERS: Readonly<Record<string, MockUsageAnswer>> = {
  'openai-json': {
    contentType: 'application/json',
    body: JSON.stringify({
      id: 'chatcmpl-usage',
      object: 'chat.completion',
      model: 'gpt-4o-2024-08-06',
      choices: [{ index: 0, message: { role: 'assistant', content: 'usage is "prompt_tokens": 1 here' } }],
      usage: { prompt_tokens: 1200, completion_tokens: 340, total_tokens: 1540 },
    }),
    model: 'gpt-4o-2024-08-06',
    inputTokens: 1200,
    outputTokens: 340,
  },
  'openai-sse': {
    contentType: 'text/event-stream; charset=utf-8',
    body: sseData([
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        model: 'gpt-4o-mini',
        choices: [{ delta: { content: 'Hi' } }],
        usage: null,
      },
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        model: 'gpt-4o-mini',
        choices: [{ delta: { content: '!' } }],
        usage: null,
      },
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        model: 'gpt-4o-mini',
        choices: [],
        usage: { prompt_tokens: 77, completion_tokens: 9, total_tokens: 86 },
      },
    ]),
    model: 'gpt-4o-mini',
    inputTokens: 77,
    outputTokens: 9,
  },
  'anthropic-json': {
    contentType: 'application/json',
    body: JSON.stringify({
      id: 'msg_usage',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [{ type: 'text', text: 'Hello' }],
      usage: { input_tokens: 2048, output_tokens: 512 },
    }),
    model: 'claude-sonnet-4-5-20250929',
    inputTokens: 2048,
    outputTokens: 512,
  },
  'anthropic-sse': {
    contentType: 'text/event-stream; charset=utf-8',
    body:
      sseEvent('message_start', {
        type: 'message_start',
        message: { id: 'msg_u', model: 'claude-haiku-4-5', usage: { input_tokens: 31, output_tokens: 1 } },
      }) +
      sseEvent('content_block_delta', {
        type: 'content_block_delta',
        delta: { type: 'text_delta', text: 'Hi' },
      }) +
      sseEvent('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        usage: { output_tokens: 44 },
      }) +
      sseEvent('message_stop', { type: 'message_stop' }),
    model: 'claude-haiku-4-5',
    inputTokens: 31,
    outputTokens: 44,
  },
};

/**
 * `/usage-split?shape=<MOCK_USAGE_ANSWERS key>&at=12,40`: the canned answer written in pieces cut
 * at those byte offsets, each piece handed to the socket (and a few ms apart) before the next.
 */
async function usageSplit(ctx: Ctx): Promise<void> {
  const answer = MOCK_USAGE_ANSWERS[ctx.url.searchParams.get('shape') ?? ''];
  if (answer === undefined) return sendError(ctx.res, 400, 'unknown shape');
  const bytes = Buffer.from(answer.body);
  const cuts = (ctx.url.searchParams.get('at') ?? '')
    .split(',')
    .filter((s) => s !== '')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0 && n < bytes.length)
    .sort((a, b) => a - b);
  ctx.res.writeHead(200, { 'content-type': answer.contentType });
  ctx.res.flushHeaders();
  let from = 0;
  for (const at of [...cuts, bytes.length]) {
    if (at > from) await write(ctx.res, bytes.subarray(from, at));
    from = at;
    await sleep(3, undefined, { signal: ctx.signal });
  }
  ctx.res.end();
}

async function slow(ctx: Ctx): Promise<void> {
  const ms = intParam(ctx.url.searchParams.get('ms'), 1000);
  await sleep(ms, undefined, { signal: ctx.signal });
  sendJson(ctx.res, 200, { ok: true, waited_ms: ms });
}

async function slowBody(ctx: Ctx): Promise<void> {
  const ms = intParam(ctx.url.searchParams.get('ms'), 1000);
  ctx.res.writeHead(200, { 'content-type': 'application/json' });
  ctx.res.flushHeaders();
  await sleep(ms, undefined, { signal: ctx.signal });
  ctx.res.end(JSON.stringify({ ok: true, waited_ms: ms }));
}

function status(ctx: Ctx, match: RegExpExecArray): Promise<void> {
  const code = Number(match[1]);
  if (code < 200 || code > 599) {
    sendError(ctx.res, 400, `Mock cannot answer status ${code}`);
  } else if (code === 204 || code === 205 || code === 304) {
    ctx.res.writeHead(code, { 'x-mock-error': 'yes' });
    ctx.res.end();
  } else {
    sendError(ctx.res, code, `Mock provider error with status ${code}`, { 'x-mock-error': 'yes' });
  }
  return Promise.resolve();
}

async function resetMidStream(ctx: Ctx): Promise<void> {
  startSse(ctx.res);
  for (let i = 0; i < 2; i++) {
    await write(ctx.res, `data: ${JSON.stringify({ index: i, text: mockStreamPiece(i) })}\n\n`);
  }
  // Let the two events reach the client before the connection dies, so it sees a partial stream.
  await sleep(20, undefined, { signal: ctx.signal });
  // `resetAndDestroy()` throws on a TLS socket (its handle is not TCP), so the RST goes out on the raw TCP
  // socket underneath, found by its (unique on loopback) peer address. The client sees ECONNRESET mid-body.
  const tlsSocket = ctx.req.socket;
  const raw = ctx
    .tcpSockets()
    .find((s) => s.remotePort === tlsSocket.remotePort && s.remoteAddress === tlsSocket.remoteAddress);
  if (raw) raw.resetAndDestroy();
  else tlsSocket.destroy();
}

async function big(ctx: Ctx): Promise<void> {
  const total = intParam(ctx.url.searchParams.get('bytes'), 1024 * 1024, 1024 * 1024 * 1024);
  const block = Buffer.alloc(64 * 1024);
  for (let i = 0; i < block.length; i++) block[i] = mockBigByte(i);
  ctx.res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
  let sent = 0;
  while (sent < total) {
    const n = Math.min(total - sent, block.length - (sent % 26));
    // Slicing at `sent % 26` keeps the pattern continuous across blocks.
    const piece = block.subarray(sent % 26, (sent % 26) + n);
    sent += n;
    if (!ctx.res.write(piece)) {
      await once(ctx.res, 'drain', { signal: ctx.signal });
    }
  }
  ctx.res.end();
}

function echoBody(ctx: Ctx): Promise<void> {
  ctx.res.writeHead(200, {
    'content-type': headerValue(ctx.req, 'content-type') ?? 'application/octet-stream',
    'content-length': String(ctx.body.length),
  });
  ctx.res.end(ctx.body);
  return Promise.resolve();
}

// Anchored at the end only, so any `/<prefix>` in front (e.g. `/openai/v1/...` through a proxy) still matches.
const routes: Route[] = [
  // Also matches with a suffix, so an SDK pointed at `<url>/status/429/v1` gets that error from every call.
  { pattern: /\/status\/(\d{3})(?:\/|$)/, handle: status },
  { pattern: /\/v1\/chat\/completions$/, handle: chatCompletions },
  { pattern: /\/v1\/messages$/, handle: anthropicMessages },
  { pattern: /\/v1\/models$/, handle: models },
  { pattern: /\/echo-auth$/, handle: echoAuth },
  { pattern: /\/echo-key-encoded$/, handle: echoKeyEncoded },
  { pattern: /\/slow$/, handle: slow },
  { pattern: /\/slow-body$/, handle: slowBody },
  { pattern: /\/reset-mid-stream$/, handle: resetMidStream },
  { pattern: /\/big$/, handle: big },
  { pattern: /\/usage-split$/, handle: usageSplit },
  { pattern: /\/echo-body$/, handle: echoBody },
];

export async function startMockProvider(options: MockProviderOptions = {}): Promise<MockProvider> {
  const defaultChunks = options.chunks ?? DEFAULT_CHUNKS;
  const defaultGapMs = options.gapMs ?? DEFAULT_GAP_MS;

  const ca = await createTestCa('tokenproxy mock provider CA');
  const { certPem, keyPem } = await ca.issue(['localhost', '127.0.0.1']);

  const received: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();
  const shutdown = new AbortController();

  const server = createServer({ cert: certPem, key: keyPem, minVersion: 'TLSv1.2', keepAlive: true });
  // Raw TCP sockets, tracked from accept: this also covers connections still in the TLS handshake, which
  // `closeAllConnections()` would not see.
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // TLS handshake failures (e.g. a client that does not trust the CA) are expected in tests, not crashes.
  server.on('tlsClientError', () => undefined);

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const receivedAt = Date.now();
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('error', () => undefined);
    req.on('end', () => {
      const record: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(pieces),
        receivedAt,
      };
      received.push(record);
      for (const wake of [...waiters]) wake();
      void dispatch(req, res, record.body);
    });
  });

  async function dispatch(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const clientGone = new AbortController();
    res.on('close', () => clientGone.abort());
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const ctx: Ctx = {
      req,
      res,
      url,
      body,
      chunks: intParam(headerValue(req, 'x-mock-chunks'), defaultChunks, 10_000),
      gapMs: intParam(headerValue(req, 'x-mock-gap-ms'), defaultGapMs, 60_000),
      signal: AbortSignal.any([clientGone.signal, shutdown.signal]),
      tcpSockets: () => [...sockets],
    };
    try {
      for (const route of routes) {
        const match = route.pattern.exec(url.pathname);
        if (match) return await route.handle(ctx, match);
      }
      sendError(res, 404, `No mock route for ${req.method ?? ''} ${url.pathname}`);
    } catch (err) {
      if (ctx.signal.aborted) {
        res.destroy();
        return;
      }
      if (!res.headersSent) {
        sendError(res, 500, `Mock provider failure: ${err instanceof Error ? err.message : String(err)}`);
      } else {
        res.destroy();
      }
    }
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;

  return {
    url: `https://127.0.0.1:${port}`,
    port,
    caCertPem: ca.caCertPem,
    received,
    reset() {
      received.length = 0;
    },
    waitForRequests(count: number, timeoutMs = 5000): Promise<ReceivedRequest[]> {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (received.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(received.slice());
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`mock provider: waited ${timeoutMs} ms for ${count} requests, got ${received.length}`),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close(): Promise<void> {
      closing ??= (async () => {
        shutdown.abort();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        await closed;
      })();
      return closing;
    },
  };
}
