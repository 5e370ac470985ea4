/**
 * What a budgeted request's body says about its worst case, read from a bounded prefix of the body
 * (never the whole body): the model, and the most output tokens it allows.
 */

/** Bytes of a budgeted request's body read before it is forwarded. */
export const REQUEST_PREFIX_BYTES = 16 * 1024;

export interface RequestHints {
  readonly model: string | null;
  /** The largest output maximum named (`max_tokens`, `max_output_tokens`, …); null for none. */
  readonly maxOutputTokens: number | null;
}

// Quotes inside JSON strings are escaped, so these only match keys. The largest value wins: a body
// naming two maxima must not be reserved for the smaller one.
const MAX_KEYS =
  /"(?:max_tokens|max_output_tokens|max_completion_tokens|maxOutputTokens)"\s*:\s*(\d{1,12})\b/g;
const MODEL = /"model"\s*:\s*"([^"\\]{1,100})"/;

export function requestHints(prefix: Buffer): RequestHints {
  const text = prefix.toString('latin1');
  let max: number | null = null;
  for (const m of text.matchAll(MAX_KEYS)) {
    const n = Number(m[1]);
    if (max === null || n > max) max = n;
  }
  const found = MODEL.exec(text)?.[1];
  // A model name has no control characters; a string with them is not one.
  const model = found === undefined || /[^\x20-\x7e\u00a0-\u00ff]/.test(found) ? null : found;
  return { model, maxOutputTokens: max };
}

/** Gemini names the model in the path: `/v1beta/models/gemini-2.0-flash:generateContent`. */
export function modelFromPath(path: string): string | null {
  const at = path.indexOf('/models/');
  if (at === -1) return null;
  const rest = path.slice(at + '/models/'.length);
  const end = rest.search(/[:/?]/);
  const name = end === -1 ? rest : rest.slice(0, end);
  return name.length > 0 && name.length <= 100 ? decodeURIComponentSafe(name) : null;
}

function decodeURIComponentSafe(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

export interface WorstCaseInput {
  readonly hints: RequestHints;
  /** The body's length when announced (`content-length`), else null. */
  readonly contentLength: number | null;
  /** Bytes read into the prefix, and whether that was the whole body. */
  readonly prefixBytes: number;
  readonly complete: boolean;
  readonly defaultReservation: number;
}

/**
 * The reservation rule (docs/usage.md). Input: one token per byte of body, an upper bound for text
 * (no tokenizer makes more tokens than bytes). Output: the body's maximum when the prefix held the
 * whole body; when it did not, the maximum could be repeated later in the body (JSON parsers keep
 * the last), so at least the default reservation; the default when the body names none.
 */
export function worstCase(input: WorstCaseInput): { inputTokens: number; outputTokens: number } {
  const { hints, contentLength, prefixBytes, complete, defaultReservation } = input;
  const inputTokens = contentLength ?? (complete ? prefixBytes : prefixBytes + defaultReservation);
  const max = hints.maxOutputTokens;
  const outputTokens = max === null ? defaultReservation : complete ? max : Math.max(max, defaultReservation);
  return { inputTokens, outputTokens };
}
