import { describe, expect, it } from 'vitest';
import { modelFromPath, requestHints, worstCase } from '../../src/usage/request-hints.js';
import { budgetLimit, describeBudget, parseBudget, periodWindow } from '../../src/usage/budget.js';

describe('request hints from a body prefix', () => {
  const CASES: readonly [body: string, model: string | null, max: number | null][] = [
    ['{"model":"gpt-4o","max_tokens":100,"messages":[]}', 'gpt-4o', 100],
    ['{"model": "claude-sonnet-4-5", "max_tokens" : 4096}', 'claude-sonnet-4-5', 4096],
    ['{"model":"gpt-5","max_completion_tokens":50,"max_tokens":10}', 'gpt-5', 50], // the largest wins
    ['{"model":"o3","max_output_tokens":7}', 'o3', 7],
    ['{"generationConfig":{"maxOutputTokens":256}}', null, 256],
    ['{"model":"gpt-4o","messages":[{"content":"say \\"max_tokens\\": 1"}]}', 'gpt-4o', null], // inside a string
    ['{"messages":[]}', null, null],
    ['not json at all', null, null],
    ['{"model":"bad\\"name","max_tokens":"lots"}', null, null],
  ];
  for (const [body, model, max] of CASES) {
    it(body, () => {
      expect(requestHints(Buffer.from(body))).toEqual({ model, maxOutputTokens: max });
    });
  }

  it('takes Gemini models from the path', () => {
    expect(modelFromPath('/gemini/v1beta/models/gemini-2.0-flash:generateContent')).toBe('gemini-2.0-flash');
    expect(modelFromPath('/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent')).toBe(
      'gemini-2.5-pro',
    );
    expect(modelFromPath('/openai/v1/chat/completions')).toBeNull();
  });
});

describe('the worst case a budgeted request reserves', () => {
  const hints = (max: number | null) => ({ model: 'm', maxOutputTokens: max });
  const CASES: readonly [
    name: string,
    input: Parameters<typeof worstCase>[0],
    expected: { inputTokens: number; outputTokens: number },
  ][] = [
    [
      'whole body with a maximum',
      { hints: hints(100), contentLength: 80, prefixBytes: 80, complete: true, defaultReservation: 4096 },
      { inputTokens: 80, outputTokens: 100 },
    ],
    [
      'no maximum: the default',
      { hints: hints(null), contentLength: 80, prefixBytes: 80, complete: true, defaultReservation: 4096 },
      { inputTokens: 80, outputTokens: 4096 },
    ],
    [
      'body longer than the prefix: at least the default',
      {
        hints: hints(100),
        contentLength: 50_000,
        prefixBytes: 16_384,
        complete: false,
        defaultReservation: 4096,
      },
      { inputTokens: 50_000, outputTokens: 4096 },
    ],
    [
      'a large maximum in a long body',
      {
        hints: hints(9000),
        contentLength: 50_000,
        prefixBytes: 16_384,
        complete: false,
        defaultReservation: 4096,
      },
      { inputTokens: 50_000, outputTokens: 9000 },
    ],
    [
      'chunked, longer than the prefix',
      {
        hints: hints(10),
        contentLength: null,
        prefixBytes: 16_384,
        complete: false,
        defaultReservation: 1000,
      },
      { inputTokens: 17_384, outputTokens: 1000 },
    ],
    [
      'chunked, whole body read',
      { hints: hints(10), contentLength: null, prefixBytes: 300, complete: true, defaultReservation: 1000 },
      { inputTokens: 300, outputTokens: 10 },
    ],
  ];
  for (const [name, input, expected] of CASES) {
    it(name, () => expect(worstCase(input)).toEqual(expected));
  }
});

describe('budget rules', () => {
  it('windows: UTC day, UTC month, total', () => {
    const now = Date.UTC(2026, 10, 23, 22, 30);
    expect(periodWindow('day', now)).toEqual({
      name: '2026-11-23',
      start: '2026-11-23T00:00:00.000Z',
      end: Date.UTC(2026, 10, 24),
    });
    expect(periodWindow('month', now)).toEqual({
      name: '2026-11',
      start: '2026-11-01T00:00:00.000Z',
      end: Date.UTC(2026, 11, 1),
    });
    expect(periodWindow('month', Date.UTC(2026, 11, 31, 23))).toMatchObject({
      name: '2026-12',
      end: Date.UTC(2027, 0, 1),
    });
    expect(periodWindow('total', now)).toMatchObject({ name: 'total', end: Infinity });
  });

  it('limits and descriptions', () => {
    expect(budgetLimit({ amount_usd: 20, period: 'month' })).toBe(20_000_000);
    expect(budgetLimit({ tokens: 5, period: 'day' })).toBe(5);
    expect(describeBudget({ amount_usd: 20, period: 'month' })).toBe('$20.00 per month');
    expect(describeBudget({ tokens: 2000000, period: 'total' })).toBe('2000000 tokens in total');
    expect(parseBudget({ amount_usd: 1e12, period: 'day' }, 'budget')).toMatchObject({ ok: false });
    expect(parseBudget({ tokens: 3, period: 'day' }, 'budget')).toEqual({
      ok: true,
      budget: { tokens: 3, period: 'day' },
    });
  });
});
