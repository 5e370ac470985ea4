/**
 * The forms in which a provider might echo the real key (DESIGN §4 step 10): the key itself and its
 * common encodings. Built once per request when the key is decrypted; every form is a view into one
 * Buffer that is zeroed with the key (`wipe`). gzip-compressed echoes stay out of reach: upstream
 * answers are requested as `identity` (src/proxy/headers.ts) and a compressed body is passed on as is.
 */

/** Encoded forms shorter than this are not looked for: they would match ordinary text by chance. */
const MIN_ENCODED_LENGTH = 8;

export class KeyPatterns {
  /** Longest first, so that where two forms match at the same place the longer one is replaced. */
  readonly patterns: readonly Buffer[];
  /** The same forms as strings (latin1), for header values. Strings cannot be zeroed; `wipe` drops them. */
  #texts: readonly string[] | null = null;
  readonly #storage: Buffer;
  /** Longest form length − 1: the most bytes a stream ever holds back. */
  readonly maxHold: number;

  constructor(key: Buffer) {
    if (key.length === 0) throw new RangeError('cannot redact an empty key');
    const forms = keyForms(key);
    let total = 0;
    for (const form of forms) total += form.length;
    // One allocation for every form, outside Node's shared pool so that zeroing it reaches every copy.
    this.#storage = Buffer.allocUnsafeSlow(total);
    const patterns: Buffer[] = [];
    let at = 0;
    for (const form of forms) {
      const view = this.#storage.subarray(at, at + form.length);
      if (typeof form === 'string') view.write(form, 'latin1');
      else form.copy(view);
      patterns.push(view);
      at += form.length;
    }
    this.patterns = patterns;
    this.maxHold = (patterns[0] as Buffer).length - 1;
  }

  get texts(): readonly string[] {
    this.#texts ??= this.patterns.map((p) => p.toString('latin1'));
    return this.#texts;
  }

  /** Zeroes every form; the redactors using them must be done. */
  wipe(): void {
    this.#storage.fill(0);
    this.#texts = null;
  }
}

/**
 * The key and, when they differ from it and are long enough: base64 (standard and url-safe) at each
 * of the 3 alignments a key can have inside a longer base64 text, hex (lower and upper case),
 * `encodeURIComponent`, and JSON escapes (`\/`, and `\u00XX` for every non-alphanumeric character in
 * lower- and upper-case hex). Longest first, no duplicates.
 */
export function keyForms(key: Buffer): (Buffer | string)[] {
  const text = key.toString('latin1');
  const forms: (Buffer | string)[] = [key];
  const seen = new Set<string>([text]);
  const add = (form: string): void => {
    if (form.length < MIN_ENCODED_LENGTH || seen.has(form)) return;
    seen.add(form);
    forms.push(form);
  };
  for (let offset = 0; offset < 3; offset++) {
    const standard = alignedBase64(key, offset);
    add(standard);
    add(standard.replaceAll('+', '-').replaceAll('/', '_'));
  }
  const hex = key.toString('hex');
  add(hex);
  add(hex.toUpperCase());
  // Text encodings of a text key; provider keys are ASCII, and every form below then is too.
  if (isAscii(key)) {
    add(encodeURIComponent(text));
    add(text.replaceAll('/', '\\/'));
    add(text.replace(/[^A-Za-z0-9]/g, (c) => unicodeEscape(c, false)));
    add(text.replace(/[^A-Za-z0-9]/g, (c) => unicodeEscape(c, true)));
  }
  return forms.sort((a, b) => b.length - a.length);
}

/**
 * The base64 characters fully determined by the key when it starts `offset` bytes (0-2) after a
 * 3-byte boundary of the encoded data: what appears of it inside the base64 of any longer text.
 */
function alignedBase64(key: Buffer, offset: number): string {
  const padded = Buffer.alloc(offset + key.length + 2);
  key.copy(padded, offset);
  const encoded = padded.toString('base64');
  padded.fill(0);
  const first = Math.ceil((8 * offset) / 6);
  const end = Math.floor((8 * (offset + key.length)) / 6);
  return encoded.slice(first, end);
}

function unicodeEscape(char: string, upper: boolean): string {
  const hex = char.charCodeAt(0).toString(16).padStart(4, '0');
  return `\\u${upper ? hex.toUpperCase() : hex}`;
}

function isAscii(bytes: Buffer): boolean {
  for (const byte of bytes) if (byte > 0x7f) return false;
  return true;
}
