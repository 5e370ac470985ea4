import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/config-error.js';
import { checkShape, describeProblem, numberIn, type ObjectShape } from '../config/object-shape.js';

/**
 * The price table: USD per million tokens, per provider and model. The shipped default
 * (prices/default.json, dated) is merged with the config file's `prices`, model by model.
 * A price in USD per million tokens is also micro-USD per token, so a cost in micro-USD is
 * `input × input price + output × output price`, with no scaling.
 */

export interface Price {
  /** USD per million input (prompt) tokens. */
  readonly input: number;
  /** USD per million output (completion) tokens. */
  readonly output: number;
}

/** provider id → model → price. */
export type PriceData = Readonly<Record<string, Readonly<Record<string, Price>>>>;

const MAX_PRICE = 10_000;
const PRICE_SHAPE = {
  input: { rule: numberIn(0, MAX_PRICE), required: true },
  output: { rule: numberIn(0, MAX_PRICE), required: true },
} as const satisfies ObjectShape;
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,99}$/;
const EXAMPLE = '{"openai": {"gpt-4o": {"input": 2.5, "output": 10}}} (USD per million tokens)';

/** Checks a `prices` object (config file or default file); the error names the entry and the fix. */
export function parsePrices(raw: unknown, where: string): PriceData {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${where} must be an object: ${EXAMPLE}.`);
  }
  const out: Record<string, Record<string, Price>> = {};
  for (const [provider, models] of Object.entries(raw)) {
    if (typeof models !== 'object' || models === null || Array.isArray(models)) {
      throw new ConfigError(`${where}: provider "${provider}" must map model names to prices: ${EXAMPLE}.`);
    }
    const table: Record<string, Price> = {};
    for (const [model, value] of Object.entries(models as Record<string, unknown>)) {
      if (!MODEL_NAME.test(model)) {
        throw new ConfigError(
          `${where}: model name ${JSON.stringify(model)} of provider "${provider}" is not accepted; use the provider's model id (letters, digits, . _ : / @ -, up to 100).`,
        );
      }
      const checked = checkShape(value, PRICE_SHAPE);
      if (!checked.ok) {
        const { problem } = checked;
        const found = problem.kind === 'not_object' ? '' : ` (${describeProblem(problem)})`;
        throw new ConfigError(
          `${where}: price of "${provider}" model "${model}" must be {"input": <USD per million tokens>, "output": <USD per million tokens>}, numbers from 0 to ${MAX_PRICE}${found}.`,
        );
      }
      const { input, output } = checked.value;
      table[model] = { input, output };
    }
    out[provider] = table;
  }
  return out;
}

export const DEFAULT_PRICES_FILE = new URL('../../prices/default.json', import.meta.url);

/** The shipped table (prices/default.json), checked like a config file's. */
export function loadDefaultPrices(file: URL | string = DEFAULT_PRICES_FILE): PriceData {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`Cannot read the default price table ${String(file)}: ${(err as Error).message}.`);
  }
  const providers = (parsed as { providers?: unknown } | null)?.providers;
  return parsePrices(providers, `key "providers" of ${String(file)}`);
}

/** The defaults with the config file's entries added or replacing theirs, model by model. */
export function mergePrices(base: PriceData, override: PriceData): PriceData {
  const out: Record<string, Record<string, Price>> = {};
  for (const [provider, models] of Object.entries(base)) out[provider] = { ...models };
  for (const [provider, models] of Object.entries(override)) out[provider] = { ...out[provider], ...models };
  return out;
}

/**
 * Suffixes a provider adds to a model family's name for a snapshot: a date (`-2024-08-06`,
 * `-20250929`, `@20250929`), a version number (`-001`) or `-latest`. One is removed when the exact
 * name is not in the table.
 */
const SNAPSHOT_SUFFIX = /(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-\d{3}|-latest)$/;

/**
 * The rule (docs/usage.md): the exact model name; else, without a leading `models/`, the name
 * without one snapshot suffix. Never a looser prefix match: `gpt-4o-mini` must not be priced as
 * `gpt-4o`.
 */
export function priceKeys(model: string): string[] {
  const keys = [model];
  const bare = model.startsWith('models/') ? model.slice('models/'.length) : model;
  if (bare !== model) keys.push(bare);
  const family = bare.replace(SNAPSHOT_SUFFIX, '');
  if (family !== bare && family !== '') keys.push(family);
  return keys;
}

export class PriceTable {
  readonly #data: PriceData;
  readonly #highest = new Map<string, Price>();
  readonly #cache = new Map<string, Price | null>();

  constructor(data: PriceData) {
    this.#data = data;
    for (const [provider, models] of Object.entries(data)) {
      let input = 0;
      let output = 0;
      for (const price of Object.values(models)) {
        input = Math.max(input, price.input);
        output = Math.max(output, price.output);
      }
      if (Object.keys(models).length > 0) this.#highest.set(provider, { input, output });
    }
  }

  /** The model's price, or undefined for a model the table does not list. */
  lookup(provider: string, model: string | null): Price | undefined {
    if (model === null) return undefined;
    const models = this.#data[provider];
    if (models === undefined) return undefined;
    const cacheKey = `${provider} ${model}`;
    const cached = this.#cache.get(cacheKey);
    if (cached !== undefined) return cached ?? undefined;
    let found: Price | null = null;
    for (const key of priceKeys(model)) {
      if (Object.hasOwn(models, key)) {
        found = models[key] as Price;
        break;
      }
    }
    // Model names come from answers: the cache stays small whatever they send.
    if (this.#cache.size >= 1000) this.#cache.clear();
    this.#cache.set(cacheKey, found);
    return found ?? undefined;
  }

  /** The highest input and output prices of a provider: what a USD budget charges an unlisted model. */
  highest(provider: string): Price | undefined {
    return this.#highest.get(provider);
  }
}

/** Cost in micro-USD, rounded up; null when the model has no price or a count is unknown. */
export function costMicros(
  price: Price | undefined,
  input: number | null,
  output: number | null,
): number | null {
  if (price === undefined || (input === null && output === null)) return null;
  return Math.ceil((input ?? 0) * price.input + (output ?? 0) * price.output);
}
