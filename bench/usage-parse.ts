/**
 * `npm run bench:usage-parse`
 *
 * The cost of reading usage out of provider answers (src/usage/usage-scanner.ts), on its own:
 * - bulk: a 64 KiB JSON answer in one chunk, usage at the end (the scanner searches every byte);
 * - streaming: an SSE answer of 500 small chunks (~80 bytes each) ending with a usage chunk;
 * - no usage: 1 MiB of answer that never says usage, in 16 KiB chunks (what "costs nothing extra"
 *   costs).
 * Prints ns per chunk and per KiB, and the scanner's share of the time the redactor already spends
 * on the same bytes (src/proxy/redact.ts), which every answer pays. A script, not a test: timings
 * belong here. The end-to-end proxy numbers are in `npm run bench` (docs/performance.md).
 */
import { performance } from 'node:perf_hooks';
import { StreamRedactor } from '../src/proxy/redact.js';
import { UsageScanner } from '../src/usage/usage-scanner.js';

function bulk(): Buffer[] {
  const content = 'lorem ipsum dolor sit amet '.repeat(2400);
  const body = JSON.stringify({
    id: 'chatcmpl-1',
    model: 'gpt-4o-2024-08-06',
    choices: [{ index: 0, message: { role: 'assistant', content } }],
    usage: { prompt_tokens: 1200, completion_tokens: 16000, total_tokens: 17200 },
  });
  return [Buffer.from(body)];
}

function streaming(): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < 500; i++) {
    chunks.push(
      Buffer.from(
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ delta: { content: `tok${i} ` } }], usage: null })}\n\n`,
      ),
    );
  }
  chunks.push(
    Buffer.from(
      `data: {"choices":[],"usage":{"prompt_tokens":77,"completion_tokens":500}}\n\ndata: [DONE]\n\n`,
    ),
  );
  return chunks;
}

function noUsage(): Buffer[] {
  const block = Buffer.alloc(16 * 1024, 'abcdefghijklmnopqrstuvwxyz"{}:, ');
  return Array.from({ length: 64 }, () => block);
}

function time(chunks: readonly Buffer[], make: () => { write(c: Buffer): unknown }, rounds: number): number {
  let sink = 0;
  const start = performance.now();
  for (let r = 0; r < rounds; r++) {
    const s = make();
    for (const c of chunks) {
      const out = s.write(c);
      if (Buffer.isBuffer(out)) sink += out.length;
    }
  }
  const ms = performance.now() - start;
  if (sink < 0) console.log(sink);
  return (ms * 1e6) / rounds; // ns per answer
}

const SECRET = [Buffer.from('sk-bench-secret-key-0123456789abcdef')];

for (const [name, chunks, rounds] of [
  ['bulk 64 KiB JSON, 1 chunk', bulk(), 20_000],
  ['SSE, 501 chunks', streaming(), 2_000],
  ['no usage, 1 MiB in 16 KiB chunks', noUsage(), 500],
] as const) {
  const bytes = chunks.reduce((n, c) => n + c.length, 0);
  // Warm up both, then measure.
  time(chunks, () => new UsageScanner(), Math.ceil(rounds / 10));
  time(chunks, () => new StreamRedactor(SECRET), Math.ceil(rounds / 10));
  const scan = time(chunks, () => new UsageScanner(), rounds);
  const redact = time(chunks, () => new StreamRedactor(SECRET), rounds);
  console.log(
    `${name.padEnd(34)} scanner ${(scan / 1000).toFixed(1).padStart(7)} µs/answer ` +
      `${(scan / chunks.length).toFixed(0).padStart(6)} ns/chunk ${((scan * 1024) / bytes).toFixed(0).padStart(5)} ns/KiB | ` +
      `redactor ${(redact / 1000).toFixed(1).padStart(7)} µs/answer (scanner = ${((scan / redact) * 100).toFixed(0)} % of it)`,
  );
}
