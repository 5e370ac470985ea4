/**
 * The forms in which a provider might echo the real key (DESIGN §4 step 10): the key itself and its
 * common encodings. Built once per request when the key is decrypted, byte by byte into one Buffer
 * that is zeroed with the key (`wipe`), so the forms hold no key material after the request; only
 * the few base64/URL strings made on the way (like the key's own header string) wait for the GC.
 * Compressed echoes are found too: upstream answers are requested as `identity` (src/proxy/headers.ts)
 * and a provider that compresses anyway is decoded before redaction (src/proxy/answer-encoding.ts).
 */

/** Encoded forms shorter than this are not looked for: they would match ordinary text by chance. */
const MIN_ENCODED_LENGTH = 8;

const HEX_LOWER = Buffer.from('0123456789abcdef');
const HEX_UPPER = Buffer.from('0123456789ABCDEF');

export class KeyPatterns {
  /** Longest first, so that where two forms match at the same place the longer one is replaced. */
  readonly patterns: readonly Buffer[];
  /** The same forms as strings (latin1), for header values. Strings cannot be zeroed; `wipe` drops them. */
  #texts: readonly string[] | null = null;
  readonly #storage: Buffer;
  /** Longest form length − 1: the most bytes a stream ever holds back. */
  readonly maxHold: number;
  /** The shortest form's length: shorter text cannot hold any form. */
  readonly shortest: number;

  constructor(key: Buffer) {
    if (key.length === 0) throw new RangeError('cannot redact an empty key');
    const forms = new FormWriter(key);
    this.#storage = forms.storage;
    this.patterns = forms.done();
    this.maxHold = (this.patterns[0] as Buffer).length - 1;
    this.shortest = (this.patterns[this.patterns.length - 1] as Buffer).length;
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
export function keyForms(key: Buffer): Buffer[] {
  return new FormWriter(key).done().map((form) => Buffer.from(form));
}

/**
 * One zeroed scratch buffer for the base64 alignments, reused by every request: a fresh
 * `Buffer.alloc` per request was an ArrayBuffer of its own for the scavenger to free. It holds key
 * bytes only inside one synchronous constructor call and is zeroed again before it returns.
 */
let pad = Buffer.alloc(512);

function padFor(size: number): Buffer {
  if (pad.length < size) pad = Buffer.alloc(size);
  return pad;
}

/** Writes the forms one after the other into one Buffer sized for the largest possible set. */
class FormWriter {
  readonly storage: Buffer;
  readonly #key: Buffer;
  readonly #forms: Buffer[] = [];
  #at = 0;

  constructor(key: Buffer) {
    this.#key = key;
    const n = key.length;
    let specials = 0;
    let slashes = 0;
    let ascii = true;
    for (let i = 0; i < n; i++) {
      const c = key[i] as number;
      if (c > 0x7f) ascii = false;
      else if (!isAlphanumeric(c)) specials++;
      if (c === 47) slashes++;
    }
    // raw + 6 base64 + 2 hex, and for a text key: URL (at most 3 bytes per special), `\/`, 2 `\u00XX`.
    const base64 = Math.ceil((n * 4) / 3);
    const size =
      n + 6 * base64 + 4 * n + (ascii ? n + 2 * specials + n + specials + 2 * (n + 5 * specials) : 0);
    // Pooled for small sizes: the pool's other users never see this slice, and wipe zeroes it.
    this.storage = Buffer.allocUnsafe(size);
    this.#add(key);
    const padded = padFor(n + 4);
    for (let offset = 0; offset < 3; offset++) {
      key.copy(padded, offset);
      const encoded = padded.toString('base64', 0, offset + n + 2);
      padded.fill(0, 0, offset + n);
      // Only the characters fully determined by the key's bits at this alignment.
      const first = Math.ceil((8 * offset) / 6);
      const end = Math.floor((8 * (offset + n)) / 6);
      this.#addText(encoded, first, end, false);
      this.#addText(encoded, first, end, true);
    }
    this.#addHex(HEX_LOWER);
    this.#addHex(HEX_UPPER);
    // Forms that would equal the key are not even written (an alphanumeric key has none).
    if (ascii && specials > 0) {
      const url = encodeURIComponent(key.toString('latin1'));
      if (url.length !== n) this.#addText(url, 0, url.length, false);
      if (slashes > 0) this.#addEscaped(false, false);
      this.#addEscaped(true, false);
      this.#addEscaped(true, true);
    }
  }

  /**
   * The forms, longest first, each a view into `storage`. Sorted in place by insertion: a dozen
   * entries, and `Array#sort` copied them into a work array of its own on every request.
   */
  done(): Buffer[] {
    const forms = this.#forms;
    for (let i = 1; i < forms.length; i++) {
      const form = forms[i] as Buffer;
      let j = i - 1;
      for (; j >= 0 && (forms[j] as Buffer).length < form.length; j--) forms[j + 1] = forms[j] as Buffer;
      forms[j + 1] = form;
    }
    return forms;
  }

  #add(form: Buffer): void {
    form.copy(this.storage, this.#at);
    this.#commit(form.length);
  }

  /**
   * Keeps the form just written at `#at` (of `length` bytes) unless it is too short or known. Only a
   * kept form gets a view: one per candidate was most of what building the forms allocated.
   */
  #commit(length: number): void {
    if (this.#forms.length > 0 && length < MIN_ENCODED_LENGTH) return;
    for (const form of this.#forms) if (this.#written(form, length)) return;
    this.#forms.push(this.storage.subarray(this.#at, this.#at + length));
    this.#at += length;
  }

  /** Whether `form` equals the `length` bytes just written at `#at`. */
  #written(form: Buffer, length: number): boolean {
    if (form.length !== length) return false;
    const storage = this.storage;
    const at = this.#at;
    for (let i = 0; i < length; i++) if (form[i] !== storage[at + i]) return false;
    return true;
  }

  /** Copied character by character for both alphabets: a `slice` to write was one more string each. */
  #addText(text: string, from: number, end: number, urlSafe: boolean): void {
    const out = this.storage;
    let at = this.#at;
    for (let i = from; i < end; i++) {
      const c = text.charCodeAt(i);
      out[at++] = !urlSafe ? c : c === 43 /* + */ ? 45 /* - */ : c === 47 /* / */ ? 95 /* _ */ : c;
    }
    this.#commit(end - from);
  }

  #addHex(digits: Buffer): void {
    const out = this.storage;
    const key = this.#key;
    const n = key.length;
    let at = this.#at;
    for (let i = 0; i < n; i++) {
      const byte = key[i] as number;
      out[at++] = digits[byte >> 4] as number;
      out[at++] = digits[byte & 15] as number;
    }
    this.#commit(at - this.#at);
  }

  /** JSON escapes: `\/` for `/` only, or `\u00xx` for every non-alphanumeric character. */
  #addEscaped(unicode: boolean, upper: boolean): void {
    const out = this.storage;
    const digits = upper ? HEX_UPPER : HEX_LOWER;
    const key = this.#key;
    const n = key.length;
    let at = this.#at;
    for (let i = 0; i < n; i++) {
      const c = key[i] as number;
      if (!unicode) {
        if (c === 47) out[at++] = 92; // `\`
        out[at++] = c;
      } else if (isAlphanumeric(c)) {
        out[at++] = c;
      } else {
        out[at++] = 92; // `\`
        out[at++] = 117; // `u`
        out[at++] = 48; // `0`
        out[at++] = 48;
        out[at++] = digits[c >> 4] as number;
        out[at++] = digits[c & 15] as number;
      }
    }
    this.#commit(at - this.#at);
  }
}

function isAlphanumeric(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}
