import * as zlib from 'node:zlib';
import type { Transform } from 'node:stream';

/**
 * tokenproxy asks providers for `accept-encoding: identity`, so that a key they echo can be found in
 * the body and redacted. A provider that compresses anyway is decoded here and relayed uncompressed,
 * redacted like any other answer; only an encoding that node:zlib cannot decode is passed on as it
 * came (and logged), since refusing the answer would break the call for a leak no provider is known
 * to make.
 */
export type AnswerEncoding =
  | { readonly kind: 'identity' }
  | { readonly kind: 'decoded'; readonly name: DecodedEncoding }
  | { readonly kind: 'opaque'; readonly name: string };

export type DecodedEncoding = 'gzip' | 'deflate' | 'br' | 'zstd';

const IDENTITY: AnswerEncoding = { kind: 'identity' };

const DECODED: Readonly<Record<string, DecodedEncoding>> = {
  gzip: 'gzip',
  'x-gzip': 'gzip',
  deflate: 'deflate',
  br: 'br',
  zstd: 'zstd',
};

/** What `content-encoding` says about the body; several codings at once are opaque. */
export function answerEncoding(header: string | string[] | undefined): AnswerEncoding {
  if (header === undefined) return IDENTITY;
  const codings = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length === 0) return IDENTITY;
  const only = codings.length === 1 ? codings[0] : undefined;
  // Own keys only: "constructor" or "__proto__" must not find the object's prototype.
  const decoded = only === undefined || !Object.hasOwn(DECODED, only) ? undefined : DECODED[only];
  if (decoded === undefined) {
    return { kind: 'opaque', name: codings.join(', ') };
  }
  return { kind: 'decoded', name: decoded };
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
