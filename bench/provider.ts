/**
 * The benchmark's stand-in provider: a lean HTTPS/1.1 server run in its own process (pinned by the
 * driver). `POST|GET <any path>` answers a fixed ~600-byte OpenAI-style JSON body; a query
 * `?chunks=N&interval=MS` answers an SSE stream of N chunks MS apart, each stamped with the wall
 * clock (µs precision) at which it was written, then `data: [DONE]`.
 *
 * Usage: node provider.js <cert.pem> <key.pem>; prints `{"port":N}` on stdout once listening.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

const [certFile, keyFile] = process.argv.slice(2);
if (certFile === undefined || keyFile === undefined) {
  process.stderr.write('usage: provider.js <cert.pem> <key.pem>\n');
  process.exit(2);
}

const BODY = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench0000000000000000000000',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content:
            'This is a fixed answer from the benchmark stand-in provider. It is long enough to look like a short completion.',
          refusal: null,
        },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: {
      prompt_tokens: 19,
      completion_tokens: 24,
      total_tokens: 43,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
    },
    service_tier: 'default',
    system_fingerprint: 'fp_bench0000',
  }),
);

const JSON_HEADERS = [
  'content-type',
  'application/json',
  'content-length',
  String(BODY.length),
  'openai-processing-ms',
  '1',
  'x-request-id',
  'req_bench',
];
const SSE_HEADERS = [
  'content-type',
  'text/event-stream',
  'cache-control',
  'no-cache',
  'x-request-id',
  'req_bench',
];
const DONE = Buffer.from('data: [DONE]\n\n');

/** Wall clock in ms with sub-ms precision, comparable across processes on this machine. */
function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

function stream(res: ServerResponse, chunks: number, intervalMs: number): void {
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
  let sent = 0;
  const tick = (): void => {
    if (res.destroyed) return;
    res.write(
      `data: {"object":"chat.completion.chunk","i":${sent},"t":${wallMs().toFixed(3)},"choices":[{"index":0,"delta":{"content":"tok"}}]}\n\n`,
    );
    sent++;
    if (sent >= chunks) {
      clearInterval(timer);
      res.end(DONE);
    }
  };
  const timer = setInterval(tick, intervalMs);
  res.once('close', () => clearInterval(timer));
}

/** Like a real provider, the answer starts only once the whole request body has been read. */
function handle(req: IncomingMessage, res: ServerResponse): void {
  req.on('end', () => answer(req, res));
  req.resume();
}

function answer(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  if (q === -1) {
    res.writeHead(200, JSON_HEADERS);
    res.end(BODY);
    return;
  }
  const params = new URLSearchParams(url.slice(q + 1));
  const chunks = Math.max(1, Number(params.get('chunks') ?? '20'));
  const interval = Math.max(1, Number(params.get('interval') ?? '50'));
  stream(res, chunks, interval);
}

const server = createServer(
  {
    cert: readFileSync(certFile, 'utf8'),
    key: readFileSync(keyFile, 'utf8'),
    minVersion: 'TLSv1.3',
    ALPNProtocols: ['http/1.1'],
    keepAliveTimeout: 65_000,
    noDelay: true,
    maxHeaderSize: 16 * 1024,
  },
  handle,
);
server.on('tlsClientError', () => undefined);
server.maxConnections = 20_000;
server.listen({ host: '127.0.0.1', port: 0 }, () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
const stop = (): void => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
