import { describe, expect, it } from 'vitest';
import { MAX_TAIL, UsageScanner, type Usage } from '../../src/usage/usage-scanner.js';

const openaiJson = JSON.stringify({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'gpt-4o-2024-08-06',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'say \\"prompt_tokens\\": 999 and "model": x' } },
  ],
  usage: {
    prompt_tokens: 1234,
    completion_tokens: 56,
    total_tokens: 1290,
    prompt_tokens_details: { cached_tokens: 1000 },
    completion_tokens_details: { reasoning_tokens: 7 },
  },
});

const sse = (events: unknown[]): string =>
  events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';

const openaiSse = sse([
  {
    id: 'c',
    object: 'chat.completion.chunk',
    model: 'gpt-4o-mini',
    choices: [{ delta: { content: 'Hi' } }],
    usage: null,
  },
  {
    id: 'c',
    object: 'chat.completion.chunk',
    model: 'gpt-4o-mini',
    choices: [{ delta: { content: ' there' } }],
    usage: null,
  },
  {
    id: 'c',
    object: 'chat.completion.chunk',
    model: 'gpt-4o-mini',
    choices: [],
    usage: { prompt_tokens: 11, completion_tokens: 22, total_tokens: 33 },
  },
]);

const anthropicJson = JSON.stringify({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [{ type: 'text', text: 'The "input_tokens" are {"input_tokens": 5} here' }],
  usage: {
    input_tokens: 300,
    cache_creation_input_tokens: 20,
    cache_read_input_tokens: 100,
    output_tokens: 42,
  },
});

const anthropicEvent = (type: string, data: unknown): string =>
  `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
const anthropicSse =
  anthropicEvent('message_start', {
    type: 'message_start',
    message: { id: 'msg_1', model: 'claude-haiku-4-5', usage: { input_tokens: 25, output_tokens: 1 } },
  }) +
  anthropicEvent('content_block_delta', {
    type: 'content_block_delta',
    delta: { type: 'text_delta', text: 'Hello' },
  }) +
  anthropicEvent('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn' },
    usage: { output_tokens: 15 },
  }) +
  anthropicEvent('message_stop', { type: 'message_stop' });

const geminiJson = JSON.stringify({
  candidates: [{ content: { parts: [{ text: 'Hi' }] } }],
  usageMetadata: {
    promptTokenCount: 8,
    candidatesTokenCount: 12,
    thoughtsTokenCount: 3,
    totalTokenCount: 23,
  },
  modelVersion: 'gemini-2.5-flash',
});

const CASES: readonly { name: string; body: string; expected: Usage }[] = [
  {
    name: 'OpenAI JSON',
    body: openaiJson,
    expected: { model: 'gpt-4o-2024-08-06', inputTokens: 1234, outputTokens: 56 },
  },
  {
    name: 'OpenAI SSE with include_usage',
    body: openaiSse,
    expected: { model: 'gpt-4o-mini', inputTokens: 11, outputTokens: 22 },
  },
  {
    name: 'Anthropic JSON (cache reads and writes are input)',
    body: anthropicJson,
    expected: { model: 'claude-sonnet-4-5-20250929', inputTokens: 420, outputTokens: 42 },
  },
  {
    name: 'Anthropic SSE',
    body: anthropicSse,
    expected: { model: 'claude-haiku-4-5', inputTokens: 25, outputTokens: 15 },
  },
  {
    name: 'Gemini JSON',
    body: geminiJson,
    expected: { model: 'gemini-2.5-flash', inputTokens: 8, outputTokens: 15 },
  },
  {
    name: 'an answer without usage',
    body: JSON.stringify({ object: 'list', data: [{ id: 'x' }] }),
    expected: { model: null, inputTokens: null, outputTokens: null },
  },
  {
    name: 'OpenAI SSE without include_usage',
    body: sse([{ id: 'c', model: 'gpt-4o', choices: [{ delta: { content: 'x' } }] }]),
    expected: { model: 'gpt-4o', inputTokens: null, outputTokens: null },
  },
];

function scan(chunks: readonly Buffer[]): Usage {
  const scanner = new UsageScanner();
  for (const chunk of chunks) scanner.write(chunk);
  return scanner.usage();
}

describe('UsageScanner', () => {
  for (const c of CASES) {
    const bytes = Buffer.from(c.body);

    it(`${c.name}: in one chunk`, () => {
      expect(scan([bytes])).toEqual(c.expected);
    });

    it(`${c.name}: split in two at every byte offset`, () => {
      for (let at = 0; at <= bytes.length; at++) {
        const got = scan([bytes.subarray(0, at), bytes.subarray(at)]);
        expect(got, `split at ${at}`).toEqual(c.expected);
      }
    });

    it(`${c.name}: split in three at every pair of offsets near each other`, () => {
      for (let at = 0; at < bytes.length; at++) {
        for (const width of [1, 2, 7, 31, MAX_TAIL - 1, MAX_TAIL, MAX_TAIL + 1]) {
          const end = Math.min(bytes.length, at + width);
          const got = scan([bytes.subarray(0, at), bytes.subarray(at, end), bytes.subarray(end)]);
          expect(got, `split at ${at} and ${end}`).toEqual(c.expected);
        }
      }
    });

    it(`${c.name}: one byte at a time`, () => {
      const chunks = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
      expect(scan(chunks)).toEqual(c.expected);
    });
  }

  it('never changes the bytes it reads', () => {
    const bytes = Buffer.from(anthropicSse);
    const copy = Buffer.from(bytes);
    const scanner = new UsageScanner();
    for (let i = 0; i < bytes.length; i += 13) scanner.write(bytes.subarray(i, i + 13));
    expect(bytes.equals(copy)).toBe(true);
  });

  it('ignores a model name longer than it keeps, and keys inside strings', () => {
    const body = JSON.stringify({ model: 'm'.repeat(150), note: 'a "model": "fake" \\"output_tokens\\": 5' });
    expect(scan([Buffer.from(body)])).toEqual({ model: null, inputTokens: null, outputTokens: null });
  });

  it('ignores numbers that are not counts (negative, fractional, null)', () => {
    const body = '{"usage":{"prompt_tokens":null,"completion_tokens":-3,"input_tokens":"7"}}';
    expect(scan([Buffer.from(body)])).toEqual({ model: null, inputTokens: null, outputTokens: null });
  });

  it('keeps the last cumulative count of a stream and the first model', () => {
    const body =
      anthropicEvent('message_start', {
        message: { model: 'claude-a', usage: { input_tokens: 5, output_tokens: 1 } },
      }) +
      anthropicEvent('message_delta', { usage: { output_tokens: 9 } }) +
      anthropicEvent('message_delta', { usage: { output_tokens: 30 }, model: 'other' });
    expect(scan([Buffer.from(body)])).toEqual({ model: 'claude-a', inputTokens: 5, outputTokens: 30 });
  });
});
