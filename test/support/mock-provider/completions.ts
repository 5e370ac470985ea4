import { setTimeout as sleep } from 'node:timers/promises';
import { MOCK_ANTHROPIC_MODEL, MOCK_CHAT_MODEL, MOCK_COMPLETION_TEXT, mockStreamPiece } from './canned.js';
import { parseJsonObject, sendError, sendJson, startSse, write, type Ctx } from './respond.js';

// The OpenAI and Anthropic shapes, headers included, so the real SDKs parse what the proxy relays.

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

export async function chatCompletions(ctx: Ctx): Promise<void> {
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

export async function anthropicMessages(ctx: Ctx): Promise<void> {
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

export function models(ctx: Ctx): Promise<void> {
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

/** An OpenAI-style embeddings answer: its usage names input tokens only (`prompt_tokens`). */
export function embeddings(ctx: Ctx): Promise<void> {
  const { req, res } = ctx;
  if (req.method !== 'POST') {
    sendError(res, 405, `Method ${req.method ?? ''} not allowed`);
    return Promise.resolve();
  }
  sendJson(res, 200, {
    object: 'list',
    data: [{ object: 'embedding', index: 0, embedding: [0.1, -0.2, 0.3] }],
    model: 'text-embedding-3-small',
    usage: { prompt_tokens: 8, total_tokens: 8 },
  });
  return Promise.resolve();
}
