import { execFile } from 'node:child_process';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { APP_ORIGIN, startProxyHarness, type ProxyHarness } from './harness.js';

/**
 * The HTTP/2 frames of an answer, as nghttp (nghttp2's own client, beside h2load) prints them: an
 * answer ends on its last frame (END_STREAM on the last DATA frame, or on HEADERS when it has no
 * body), not on an extra empty DATA frame in a socket write of its own, which Node's compatibility
 * layer sent for every answer because it always waits for trailers. A provider that breaks off
 * mid-answer must give a reset (INTERNAL_ERROR) and never END_STREAM, or the client takes a cut
 * answer for a whole one.
 */

const sqlite = databases.find((d) => d.name === 'sqlite');
if (sqlite === undefined) throw new Error('no sqlite fixture');

const REAL_KEY = 'sk-proj-FRAMES-REALKEY-1c5e9a3b7d2f';
const END_STREAM = 0x1;

interface Frame {
  /** The HTTP/2 stream it came on. */
  readonly stream: number;
  readonly type: string;
  readonly length: number;
  readonly flags: number;
  readonly errorCode?: string;
}

interface Answer {
  /** `:status` as received; undefined for a stream reset before its headers. */
  readonly status: number | undefined;
  readonly frames: Frame[];
}

/** The answer's status, and the frames received on the request's stream, in order. */
async function framesOf(url: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  const dir = await mkdtemp(join(tmpdir(), 'tp-frames-'));
  try {
    const args = ['-v', '-n', '-t', '10'];
    for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
    if (body !== undefined) {
      await writeFile(join(dir, 'body.json'), body);
      args.push('-d', join(dir, 'body.json'));
    }
    args.push(url);
    // nghttp exits non-zero when a stream is reset; its frame log is what is asserted.
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile('nghttp', args, { timeout: 20_000 }, (err, out) => {
        if ((err as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
          reject(new Error("nghttp not found: install Debian's nghttp2-client (.ci/run does)"));
        } else resolve(out);
      });
    });
    const status = /recv \(stream_id=\d+\) :status: (\d+)/.exec(stdout)?.[1];
    return { status: status === undefined ? undefined : Number(status), frames: parseFrames(stdout) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function parseFrames(log: string): Frame[] {
  const lines = log.split('\n');
  const received: Frame[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /recv (\w+) frame <length=(\d+), flags=0x([0-9a-f]+), stream_id=(\d+)>/.exec(lines[i] ?? '');
    if (m === null) continue;
    const errorCode = /error_code=(\w+)/.exec(lines[i + 1] ?? '')?.[1];
    received.push({
      type: m[1] ?? '',
      length: Number(m[2]),
      flags: parseInt(m[3] ?? '0', 16),
      stream: Number(m[4]),
      ...(errorCode === undefined ? {} : { errorCode }),
    });
  }
  // The request's stream is the one that received HEADERS or RST_STREAM (nghttp also opens
  // priority-only streams, which receive nothing).
  const stream = received.find((f) => f.type === 'HEADERS' || f.type === 'RST_STREAM')?.stream;
  if (stream === undefined) throw new Error(`nghttp received no answer:\n${log}`);
  return received.filter((f) => f.stream === stream);
}

function describeFrames(frames: readonly Frame[]): string {
  return frames.map((f) => `${f.type}(${f.length}, 0x${f.flags.toString(16)})`).join(' ');
}

/** The answer's last frame carries END_STREAM and no frame is an empty DATA frame. */
function expectEndsOnLastFrame(frames: readonly Frame[], lastType: 'DATA' | 'HEADERS'): void {
  const shown = describeFrames(frames);
  expect(frames.length, shown).toBeGreaterThan(0);
  const last = frames[frames.length - 1] as Frame;
  expect(last.type, shown).toBe(lastType);
  expect(last.flags & END_STREAM, shown).toBe(END_STREAM);
  expect(
    frames.filter((f) => f.type === 'DATA' && f.length === 0),
    shown,
  ).toEqual([]);
  expect(frames.filter((f) => (f.flags & END_STREAM) !== 0)).toHaveLength(1);
}

describe('HTTP/2 answers end on their last frame (sqlite, h2)', () => {
  let h: ProxyHarness;
  let token: string;
  let base: string;

  beforeAll(async () => {
    h = await startProxyHarness(sqlite, { protocol: 'h2' });
    ({ token } = await h.createToken({ realKey: REAL_KEY }));
    base = `https://127.0.0.1:${h.port}`;
  });
  afterAll(async () => {
    await h?.close();
  });

  const auth = (): Record<string, string> => ({ authorization: `Bearer ${token}`, origin: APP_ORIGIN });

  it('a forwarded JSON answer: END_STREAM on its last DATA frame', async () => {
    const { status, frames } = await framesOf(
      `${base}/openai/v1/chat/completions`,
      { ...auth(), 'content-type': 'application/json' },
      JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(status).toBe(200);
    expect(frames[0]?.type).toBe('HEADERS');
    expect(frames.some((f) => f.type === 'DATA' && f.length > 0)).toBe(true);
    expectEndsOnLastFrame(frames, 'DATA');
  });

  it("a streamed answer: END_STREAM on the stream's last frame, after every event", async () => {
    const { status, frames } = await framesOf(
      `${base}/openai/v1/chat/completions`,
      { ...auth(), 'content-type': 'application/json', 'x-mock-chunks': '3' },
      JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(status).toBe(200);
    expect(frames.filter((f) => f.type === 'DATA' && f.length > 0).length).toBeGreaterThan(1);
    const last = frames[frames.length - 1] as Frame;
    expect(last.flags & END_STREAM, describeFrames(frames)).toBe(END_STREAM);
    expect(frames.filter((f) => f.type === 'RST_STREAM')).toEqual([]);
  });

  it('a refusal (403, an origin the token does not allow): END_STREAM on its DATA frame', async () => {
    const { status, frames } = await framesOf(`${base}/openai/v1/models`, {
      authorization: `Bearer ${token}`,
      origin: 'https://evil.example',
    });
    expect(status).toBe(403);
    expectEndsOnLastFrame(frames, 'DATA');
  });

  it('a CORS preflight (204): END_STREAM on its HEADERS frame, no DATA', async () => {
    const { status, frames } = await framesOf(`${base}/openai/v1/chat/completions`, {
      ':method': 'OPTIONS',
      origin: APP_ORIGIN,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    });
    expect(status).toBe(204);
    expectEndsOnLastFrame(frames, 'HEADERS');
    expect(frames.filter((f) => f.type === 'DATA')).toEqual([]);
  });

  it('a provider that breaks off mid-answer: RST_STREAM with INTERNAL_ERROR, never END_STREAM', async () => {
    const { status, frames } = await framesOf(`${base}/openai/reset-mid-stream`, auth());
    expect(status).toBe(200);
    const shown = describeFrames(frames);
    expect(frames[0]?.type, shown).toBe('HEADERS');
    expect(
      frames.filter((f) => (f.flags & END_STREAM) !== 0),
      shown,
    ).toEqual([]);
    const reset = frames.find((f) => f.type === 'RST_STREAM');
    expect(reset?.errorCode, shown).toBe('INTERNAL_ERROR');
  });
});
