import { Agent, fetch as undiciFetch, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { startMockProvider } from '../support/mock-provider.js';
import { dispatcher, mock, useMockProvider } from './mock-provider-suite.js';

describe('mock provider', () => {
  useMockProvider();

  it('listens on loopback with a certificate for 127.0.0.1 and localhost from its own CA', async () => {
    expect(mock.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(mock.caCertPem).toContain('BEGIN CERTIFICATE');
    const byName = new Agent({ connect: { ca: mock.caCertPem, servername: 'localhost' } });
    try {
      const res = await request(`${mock.url}/v1/models`, { dispatcher: byName });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
    } finally {
      await byName.close();
    }
  });

  it('is not trusted without its CA', async () => {
    const plain = new Agent();
    try {
      await expect(request(`${mock.url}/v1/models`, { dispatcher: plain })).rejects.toThrow();
    } finally {
      await plain.close();
    }
  });

  it('reset mid-stream makes the client fail instead of hang', async () => {
    const res = await undiciFetch(`${mock.url}/reset-mid-stream`, { dispatcher });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();

    const raw = await request(`${mock.url}/openai/reset-mid-stream`, { dispatcher });
    const events: string[] = [];
    const failure = await (async () => {
      for await (const chunk of raw.body) events.push(String(chunk));
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(events.join('')).toContain('data: {"index":1');
    // A real TCP RST, not just a truncated body.
    expect(failure).toMatchObject({ code: 'ECONNRESET' });
  });

  it('keeps connections alive between requests', async () => {
    const first = await request(`${mock.url}/v1/models`, { dispatcher });
    expect(first.headers.connection).toBe('keep-alive');
    await first.body.dump();
  });
});

describe('mock provider close()', () => {
  it('returns promptly with a stream open, is idempotent, and the client sees an error', async () => {
    const mock = await startMockProvider({ chunks: 1000, gapMs: 50 });
    const dispatcher = new Agent({ connect: { ca: mock.caCertPem } });
    try {
      const res = await request(`${mock.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ stream: true }),
        dispatcher,
      });
      const reading = res.body.text();
      // An idle keep-alive connection as well, which server.close() alone would wait for.
      await (await request(`${mock.url}/v1/models`, { dispatcher })).body.dump();

      const start = performance.now();
      await Promise.all([mock.close(), mock.close()]);
      expect(performance.now() - start).toBeLessThan(2000);
      await mock.close();
      await expect(reading).rejects.toThrow();
    } finally {
      await dispatcher.destroy();
    }
  });
});
