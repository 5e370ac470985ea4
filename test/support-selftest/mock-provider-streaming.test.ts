import { describe, expect, it } from 'vitest';
import { mockStreamText } from '../support/mock-provider.js';
import { post, useMockProvider } from './mock-provider-suite.js';

interface TimedEvent {
  at: number;
  text: string;
}

/** Reads an SSE body, timestamping each event as it arrives (not when the whole body is done). */
async function readSseEvents(body: AsyncIterable<Buffer>): Promise<TimedEvent[]> {
  const events: TimedEvent[] = [];
  let pending = '';
  for await (const chunk of body) {
    pending += chunk.toString('utf8');
    let end: number;
    while ((end = pending.indexOf('\n\n')) !== -1) {
      events.push({ at: performance.now(), text: pending.slice(0, end) });
      pending = pending.slice(end + 2);
    }
  }
  return events;
}

function dataOf(event: TimedEvent): string {
  return event.text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice('data: '.length))
    .join('\n');
}

describe('mock provider', () => {
  useMockProvider();

  it('streams SSE chunks spread out in time, with per-request overrides', async () => {
    const chunks = 6;
    const gapMs = 40;
    const res = await post(
      '/v1/chat/completions',
      { model: 'gpt-test', stream: true, messages: [] },
      { 'x-mock-chunks': String(chunks), 'x-mock-gap-ms': String(gapMs) },
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = await readSseEvents(res.body);
    expect(events.map(dataOf).at(-1)).toBe('[DONE]');
    const data = events.slice(0, -1);
    expect(data).toHaveLength(chunks);
    const pieces = data.map((event) => {
      const json = JSON.parse(dataOf(event)) as {
        object: string;
        choices: { delta: { content?: string } }[];
      };
      expect(json.object).toBe('chat.completion.chunk');
      return json.choices[0]?.delta.content ?? '';
    });
    expect(pieces.join('')).toBe(mockStreamText(chunks));
    const first = data[0];
    const last = data.at(-1);
    if (!first || !last) throw new Error('no events');
    expect(last.at - first.at).toBeGreaterThanOrEqual((chunks - 1) * gapMs * 0.5);
  });

  it('uses the configured chunk count when the request does not override it', async () => {
    const res = await post('/v1/chat/completions', { stream: true });
    const events = await readSseEvents(res.body);
    expect(events).toHaveLength(4 + 1);
  });

  it('streams the Anthropic event sequence', async () => {
    const res = await post('/anthropic/v1/messages', { model: 'claude-test', stream: true, max_tokens: 5 });
    const events = await readSseEvents(res.body);
    const types = events.map((event) => /^event: (.+)$/m.exec(event.text)?.[1]);
    expect(types).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });
});
