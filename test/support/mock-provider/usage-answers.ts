import { setTimeout as sleep } from 'node:timers/promises';
import { sendError, write, type Ctx } from './respond.js';

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
export async function usageSplit(ctx: Ctx): Promise<void> {
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
