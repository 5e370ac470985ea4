import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { costMicros, loadDefaultPrices, parsePrices, priceKeys, PriceTable } from '../../src/usage/prices.js';

function configFile(content: unknown): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tokenproxy-prices-'));
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(content));
  return file;
}

const table = new PriceTable({
  openai: {
    'gpt-4o': { input: 2.5, output: 10 },
    'gpt-4o-mini': { input: 0.15, output: 0.6 },
    'gpt-4o-2024-05-13': { input: 5, output: 15 },
  },
  anthropic: { 'claude-sonnet-4-5': { input: 3, output: 15 } },
  gemini: { 'gemini-2.0-flash': { input: 0.1, output: 0.4 } },
});

describe('model name matching', () => {
  const CASES: readonly [provider: string, model: string, expected: number | undefined][] = [
    ['openai', 'gpt-4o', 2.5],
    ['openai', 'gpt-4o-2024-08-06', 2.5], // dated snapshot → family
    ['openai', 'gpt-4o-2024-05-13', 5], // an exact entry beats the family
    ['openai', 'gpt-4o-mini', 0.15], // never priced as its prefix gpt-4o
    ['openai', 'gpt-4o-mini-2024-07-18', 0.15],
    ['openai', 'gpt-4o-latest', 2.5],
    ['openai', 'gpt-4o-audio-preview', undefined], // no loose prefix match
    ['openai', 'gpt-4', undefined],
    ['anthropic', 'claude-sonnet-4-5-20250929', 3],
    ['anthropic', 'claude-sonnet-4-5@20250929', 3],
    ['anthropic', 'claude-sonnet-4-5-2025092', undefined], // not a date
    ['gemini', 'gemini-2.0-flash-001', 0.1],
    ['gemini', 'models/gemini-2.0-flash', 0.1],
    ['mistral', 'gpt-4o', undefined], // provider not in the table
    ['anthropic', 'gpt-4o', undefined], // prices are per provider
  ];
  for (const [provider, model, expected] of CASES) {
    it(`${provider} ${model} → ${String(expected)}`, () => {
      expect(table.lookup(provider, model)?.input).toBe(expected);
    });
  }

  it('lists the candidate keys in order', () => {
    expect(priceKeys('models/gemini-2.0-flash-001')).toEqual([
      'models/gemini-2.0-flash-001',
      'gemini-2.0-flash-001',
      'gemini-2.0-flash',
    ]);
    expect(priceKeys('gpt-4o')).toEqual(['gpt-4o']);
  });

  it('knows the highest price of a provider (what USD budgets charge unlisted models)', () => {
    expect(table.highest('openai')).toEqual({ input: 5, output: 15 });
    expect(table.highest('groq')).toBeUndefined();
  });
});

describe('cost', () => {
  it('is micro-USD: tokens × USD per million tokens, rounded up', () => {
    expect(costMicros({ input: 2.5, output: 10 }, 1000, 200)).toBe(4500);
    expect(costMicros({ input: 0.15, output: 0.6 }, 1, 1)).toBe(1);
    expect(costMicros({ input: 3, output: 15 }, null, 10)).toBe(150);
    expect(costMicros(undefined, 1000, 200)).toBeNull();
    expect(costMicros({ input: 3, output: 15 }, null, null)).toBeNull();
  });
});

describe('price table validation', () => {
  it('accepts the shipped default file, which is dated', () => {
    const defaults = loadDefaultPrices();
    expect(Object.keys(defaults)).toEqual(expect.arrayContaining(['openai', 'anthropic', 'gemini']));
    expect(defaults.openai?.['gpt-4o']).toEqual({ input: 2.5, output: 10 });
  });

  const BAD: readonly [name: string, raw: unknown, message: RegExp][] = [
    ['not an object', [1], /must be an object/],
    ['provider not an object', { openai: 'cheap' }, /provider "openai" must map model names/],
    [
      'price missing output',
      { openai: { 'gpt-x': { input: 1 } } },
      /"openai" model "gpt-x" must be \{"input"/,
    ],
    [
      'negative price',
      { openai: { 'gpt-x': { input: -1, output: 1 } } },
      /"gpt-x".* \(field "input" must be a number from 0 to 10000\)\.$/,
    ],
    ['price as text', { openai: { 'gpt-x': { input: '1', output: 1 } } }, /"gpt-x"/],
    [
      'unknown field',
      { openai: { 'gpt-x': { input: 1, output: 1, cached: 0.5 } } },
      /"gpt-x".* \(unknown field "cached"\)\.$/,
    ],
    ['bad model name', { openai: { 'gpt x': { input: 1, output: 1 } } }, /model name "gpt x"/],
  ];
  for (const [name, raw, message] of BAD) {
    it(`refuses ${name}, naming the entry`, () => {
      expect(() => parsePrices(raw, 'key "prices"')).toThrow(ConfigError);
      expect(() => parsePrices(raw, 'key "prices"')).toThrow(message);
    });
  }

  it("loads the config file's prices over the defaults, model by model, at start", () => {
    const config = loadConfig({
      flags: {},
      env: {},
      configFile: configFile({
        prices: { openai: { 'gpt-4o': { input: 2, output: 8 }, 'my-model': { input: 1, output: 2 } } },
      }),
    });
    expect(config.prices.openai?.['gpt-4o']).toEqual({ input: 2, output: 8 });
    expect(config.prices.openai?.['my-model']).toEqual({ input: 1, output: 2 });
    expect(config.prices.openai?.['gpt-4o-mini']).toEqual({ input: 0.15, output: 0.6 });
    expect(config.prices.anthropic?.['claude-sonnet-4-5']).toBeDefined();
    expect(config.budgetDefaultReservation).toBe(4096);
  });

  it('refuses to start with a bad price in the config file', () => {
    const file = configFile({ prices: { openai: { 'gpt-4o': { input: 'two' } } } });
    expect(() => loadConfig({ flags: {}, env: {}, configFile: file })).toThrow(
      /key "prices" of .*config\.json: price of "openai" model "gpt-4o"/,
    );
  });
});
