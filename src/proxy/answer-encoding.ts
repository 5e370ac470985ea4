import * as zlib from 'node:zlib';
import type { Transform } from 'node:stream';

/**
 * tokenproxy asks providers for `accept-encoding: identity`, so that a key they echo can be found in
 * the body and redacted. A provider that compresses anyway is decoded here (a chain of codings too,
 * `gzip, br`) and relayed uncompressed, redacted like any other answer. An encoding node:zlib cannot
 * decode is refused (502): its body could not be checked for the key, and DESIGN §4 redacts a key
 * echoed anywhere.
 */
export type AnswerEncoding =
  | { readonly kind: 'identity' }
  /** In the order they were applied: decoded last to first. */
  | { readonly kind: 'decoded'; readonly names: readonly DecodedEncoding[] }
  | { readonly kind: 'undecodable'; readonly name: string };

export type DecodedEncoding = 'gzip' | 'deflate' | 'br' | 'zstd';

const IDENTITY: AnswerEncoding = { kind: 'identity' };

const DECODED: Readonly<Record<string, DecodedEncoding>> = {
  gzip: 'gzip',
  'x-gzip': 'gzip',
  deflate: 'deflate',
  br: 'br',
  zstd: 'zstd',
};

/** More codings than this on one answer is no provider's doing: refused like an unknown one. */
const MAX_CODINGS = 4;

/** What `content-encoding` says about the body. */
export function answerEncoding(header: string | string[] | undefined): AnswerEncoding {
  if (header === undefined) return IDENTITY;
  const codings = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length === 0) return IDENTITY;
  const names: DecodedEncoding[] = [];
  for (const coding of codings) {
    // Own keys only: "constructor" or "__proto__" must not find the object's prototype.
    const decoded = Object.hasOwn(DECODED, coding) ? DECODED[coding] : undefined;
    if (decoded === undefined || codings.length > MAX_CODINGS) {
      return { kind: 'undecodable', name: codings.join(', ').slice(0, 100) };
    }
    names.push(decoded);
  }
  return { kind: 'decoded', names };
}

/**
 * The code of UndecodableAnswerError. Not snake_case like our other codes: it is logged as the
 * `error_code` of `upstream request failed`, beside undici's, Node's and OpenSSL's codes
 * (`ECONNREFUSED`, `UND_ERR_SOCKET`), and docs/errors.md gives it to operators in this spelling.
 */
export const UNDECODABLE_ENCODING = 'TOKENPROXY_UNDECODABLE_ENCODING';

/** Why an answer was refused before its head was relayed: its body cannot be checked for the key. */
export class UndecodableAnswerError extends Error {
  readonly code = UNDECODABLE_ENCODING;
  constructor(readonly encoding: string) {
    super(`the provider answered in a content encoding tokenproxy cannot decode (${encoding})`);
    this.name = 'UndecodableAnswerError';
  }
}

/** A streaming decoder for `name`; its errors are the caller's to handle. */
export function createDecoder(name: DecodedEncoding): Transform {
  switch (name) {
    case 'gzip':
      return zlib.createGunzip();
    case 'deflate':
      // RFC 9110's "deflate" is the zlib format; some servers send raw deflate, which unzip cannot
      // tell apart, so it fails as a broken answer rather than being passed on undecoded.
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      // In node:zlib since 22.15 and 23.8, below both supported floors.
      return zlib.createZstdDecompress();
  }
}

/** A chain of decoders: the body goes into `input` as it came, and comes out of `output` decoded. */
export interface ChainDecoder {
  readonly input: Transform;
  readonly output: Transform;
  /** Ends every step (a provider that broke off, a client that left). */
  destroy(): void;
}

/**
 * Decodes `names` (in the order they were applied) last to first. A step's error ends the steps after
 * it with that error, so `output` reports any failure of the chain.
 */
export function createChainDecoder(names: readonly DecodedEncoding[]): ChainDecoder {
  const steps = [...names].reverse().map(createDecoder);
  for (let i = 1; i < steps.length; i++) {
    const from = steps[i - 1] as Transform;
    const to = steps[i] as Transform;
    from.pipe(to);
    from.once('error', (err) => to.destroy(err));
  }
  return {
    input: steps[0] as Transform,
    output: steps.at(-1) as Transform,
    destroy() {
      for (const step of steps) step.destroy();
    },
  };
}
