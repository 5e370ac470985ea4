/**
 * Reads the token usage and the model out of a provider's answer as its bytes pass through, without
 * holding the answer: OpenAI (`prompt_tokens`/`completion_tokens`, also in the last SSE chunk with
 * `stream_options.include_usage`, and `input_tokens`/`output_tokens` of the Responses API), Anthropic
 * (`input_tokens` of `message_start`, the cumulative `output_tokens` of `message_delta`, cache reads
 * and writes counted as input) and Gemini (`usageMetadata`).
 *
 * It looks for the quoted key names in the raw bytes, JSON or SSE alike. Inside a JSON string a quote
 * is always escaped, so `"output_tokens"` followed by `:` can only be a key. Each field keeps its last
 * value (streams repeat usage cumulatively); the model keeps its first. Memory is bounded: only the
 * last MAX_TAIL bytes of a chunk are kept, for a key split across chunks, in two buffers allocated
 * with the scanner. The caller's bytes are only read, never changed.
 */

/** Longest key, colon, whitespace and value read across a chunk boundary; longer values are ignored. */
export const MAX_TAIL = 160;
/**
 * The model is looked for in the answer's first bytes only: OpenAI and Anthropic name it at the
 * start (and in every SSE chunk), and `"model` is slow to search for in long text full of quotes.
 * Gemini's `modelVersion` comes last, so in long Gemini answers the model comes from the path.
 */
export const MODEL_WINDOW = 4096;
/** Longest model name kept; a longer one is not a model name we can price. */
export const MAX_MODEL_LENGTH = 100;

export interface Usage {
  readonly model: string | null;
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
}

const enum Field {
  Prompt,
  Completion,
  Input,
  Output,
  CacheCreation,
  CacheRead,
  GeminiPrompt,
  GeminiCandidates,
  GeminiThoughts,
  Count,
}

interface Key {
  readonly bytes: Buffer;
  readonly field: Field;
}

/** Keys ending in `_tokens"`, longest first so `"cache_read_input_tokens"` wins over `"input_tokens"`. */
const TOKEN_KEYS: readonly Key[] = [
  { bytes: Buffer.from('"cache_creation_input_tokens"'), field: Field.CacheCreation },
  { bytes: Buffer.from('"cache_read_input_tokens"'), field: Field.CacheRead },
  { bytes: Buffer.from('"completion_tokens"'), field: Field.Completion },
  { bytes: Buffer.from('"prompt_tokens"'), field: Field.Prompt },
  { bytes: Buffer.from('"output_tokens"'), field: Field.Output },
  { bytes: Buffer.from('"input_tokens"'), field: Field.Input },
];
const GEMINI_KEYS: readonly Key[] = [
  { bytes: Buffer.from('"candidatesTokenCount"'), field: Field.GeminiCandidates },
  { bytes: Buffer.from('"thoughtsTokenCount"'), field: Field.GeminiThoughts },
  { bytes: Buffer.from('"promptTokenCount"'), field: Field.GeminiPrompt },
];

const TOKENS_END = Buffer.from('_tokens"');
const GEMINI_END = Buffer.from('TokenCount"');
const MODEL = Buffer.from('"model');
const VERSION = Buffer.from('Version"');

const QUOTE = 0x22;
const COLON = 0x3a;
const BACKSLASH = 0x5c;

export class UsageScanner {
  /**
   * Values per Field; -1 = not seen. A plain array: a Float64Array of 9 is over V8's 64-byte limit
   * for typed arrays on the heap, so each request would cost an ArrayBuffer the scavenger must free.
   */
  readonly #values: number[] = new Array<number>(Field.Count).fill(-1);
  #model: string | null = null;
  #modelVersion: string | null = null;
  /** The last bytes of what came before, for a key split across chunks. */
  readonly #tail = Buffer.allocUnsafe(MAX_TAIL);
  #tailLength = 0;
  readonly #junction = Buffer.allocUnsafe(2 * MAX_TAIL);
  /** Bytes of the answer seen before the current chunk. */
  #seen = 0;

  /** Reads `chunk`; the caller keeps passing the same chunk on, unchanged. */
  write(chunk: Buffer): void {
    const len = chunk.length;
    if (len === 0) return;
    this.#write(chunk, len);
    this.#seen += len;
  }

  #write(chunk: Buffer, len: number): void {
    if (this.#tailLength > 0) {
      // Keys that start in the tail: scan the tail joined to the chunk's start (a small copy).
      const junction = this.#junction;
      const head = Math.min(len, MAX_TAIL);
      this.#tail.copy(junction, 0, 0, this.#tailLength);
      chunk.copy(junction, this.#tailLength, 0, head);
      const joined = this.#tailLength + head;
      this.#scan(junction.subarray(0, joined));
      if (len < MAX_TAIL) {
        // The chunk is short: the new tail is the end of tail + chunk.
        const keep = Math.min(joined, MAX_TAIL);
        junction.copy(this.#tail, 0, joined - keep, joined);
        this.#tailLength = keep;
        return;
      }
    }
    this.#scan(chunk);
    const keep = Math.min(len, MAX_TAIL);
    chunk.copy(this.#tail, 0, len - keep, len);
    this.#tailLength = keep;
  }

  /** What the answer said so far; null for what it did not say. */
  usage(): Usage {
    const v = (field: Field): number => this.#values[field] as number;
    let input: number | null = null;
    let output: number | null = null;
    if (v(Field.Prompt) >= 0) input = v(Field.Prompt);
    if (v(Field.Completion) >= 0) output = v(Field.Completion);
    if (v(Field.Input) >= 0) {
      input = v(Field.Input) + Math.max(0, v(Field.CacheCreation)) + Math.max(0, v(Field.CacheRead));
    }
    if (v(Field.Output) >= 0) output = v(Field.Output);
    if (v(Field.GeminiPrompt) >= 0) input = v(Field.GeminiPrompt);
    if (v(Field.GeminiCandidates) >= 0 || v(Field.GeminiThoughts) >= 0) {
      output = Math.max(0, v(Field.GeminiCandidates)) + Math.max(0, v(Field.GeminiThoughts));
    }
    return { model: this.#model ?? this.#modelVersion, inputTokens: input, outputTokens: output };
  }

  /**
   * Reports every complete key/value in `buf`, in order. A value that reaches the end of `buf` may
   * go on in the next chunk: it is left for the next scan, which sees it again from the tail. Seeing
   * a value twice is harmless: it is assigned again, in the same order.
   */
  #scan(buf: Buffer): void {
    let at = buf.indexOf(TOKENS_END);
    while (at !== -1) {
      this.#numberKey(buf, at + TOKENS_END.length, TOKEN_KEYS);
      at = buf.indexOf(TOKENS_END, at + TOKENS_END.length);
    }
    at = buf.indexOf(GEMINI_END);
    while (at !== -1) {
      this.#numberKey(buf, at + GEMINI_END.length, GEMINI_KEYS);
      at = buf.indexOf(GEMINI_END, at + GEMINI_END.length);
    }
    if (this.#model !== null || this.#seen >= MODEL_WINDOW) return;
    at = buf.indexOf(MODEL);
    while (at !== -1 && this.#model === null) {
      this.#modelKey(buf, at + MODEL.length);
      at = buf.indexOf(MODEL, at + MODEL.length);
    }
  }

  /** `end` is just after the key's closing quote; finds which key it is and reads its number. */
  #numberKey(buf: Buffer, end: number, keys: readonly Key[]): void {
    for (const key of keys) {
      if (!endsWith(buf, end, key.bytes)) continue;
      const value = numberAfter(buf, end);
      if (value >= 0) this.#values[key.field] = value;
      return;
    }
  }

  /** `from` is just after `"model`: either `"` (the model) or `Version"` (Gemini's modelVersion). */
  #modelKey(buf: Buffer, from: number): void {
    if (from < buf.length && buf[from] === QUOTE) {
      const name = stringAfter(buf, from + 1);
      if (name !== null) this.#model = name;
    } else if (this.#modelVersion === null && startsWith(buf, from, VERSION)) {
      const name = stringAfter(buf, from + VERSION.length);
      if (name !== null) this.#modelVersion = name;
    }
  }
}

function endsWith(buf: Buffer, end: number, key: Buffer): boolean {
  const start = end - key.length;
  if (start < 0) return false;
  for (let i = 0; i < key.length; i++) if (buf[start + i] !== key[i]) return false;
  // A quote preceded by a backslash is inside a string, not a key.
  return start === 0 || buf[start - 1] !== BACKSLASH;
}

function startsWith(buf: Buffer, from: number, text: Buffer): boolean {
  if (from + text.length > buf.length) return false;
  for (let i = 0; i < text.length; i++) if (buf[from + i] !== text[i]) return false;
  return true;
}

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Index of the value after `:` following `from`, or -1 when there is none (yet). */
function valueStart(buf: Buffer, from: number): number {
  let i = from;
  const len = buf.length;
  while (i < len && isSpace(buf[i])) i++;
  if (i >= len || buf[i] !== COLON) return -1;
  i++;
  while (i < len && isSpace(buf[i])) i++;
  return i < len ? i : -1;
}

/** A non-negative integer value, or -1 (null, another type, or cut by the end of `buf`). */
function numberAfter(buf: Buffer, from: number): number {
  let i = valueStart(buf, from);
  if (i === -1) return -1;
  const len = buf.length;
  let value = 0;
  let digits = 0;
  while (i < len) {
    const c = buf[i] as number;
    if (c < 0x30 || c > 0x39) break;
    value = value * 10 + (c - 0x30);
    digits++;
    i++;
  }
  // Digits running into the end may continue in the next chunk; more than 15 is not a count.
  if (digits === 0 || i >= len || digits > 15) return -1;
  return value;
}

/** A short string value without escapes, or null. */
function stringAfter(buf: Buffer, from: number): string | null {
  const i = valueStart(buf, from);
  if (i === -1 || buf[i] !== QUOTE) return null;
  const end = buf.indexOf(QUOTE, i + 1);
  if (end === -1 || end - i - 1 > MAX_MODEL_LENGTH || end === i + 1) return null;
  for (let j = i + 1; j < end; j++) if (buf[j] === BACKSLASH || (buf[j] as number) < 0x20) return null;
  return buf.toString('utf8', i + 1, end);
}
