/**
 * The proxy address: `/<provider>/<provider path>?<query>`. Pure string work, no URL parsing: the
 * part after the provider segment is forwarded byte for byte, so nothing in it is interpreted
 * (paths with dot segments and the like are refused first: src/proxy/path-guard.ts).
 */

export interface Target {
  readonly providerId: string;
  /** The path as received (origin-form), with the provider prefix, without the query: for the log. */
  readonly path: string;
  /** What follows the provider segment, query included: appended to the provider's base path. */
  readonly suffix: string;
}

/**
 * Undefined when the target names no provider segment. An absolute-form target
 * (`GET https://evil.example/openai/v1/models HTTP/1.1`, RFC 9112 §3.2.2) is reduced to its path:
 * its authority is ignored, like `Host`, because the upstream host comes from the provider alone.
 */
export function parseTarget(raw: string): Target | undefined {
  let target = raw;
  if (target.charCodeAt(0) !== 47 /* / */) {
    const scheme = target.indexOf('://');
    if (scheme <= 0 || !/^https?$/i.test(target.slice(0, scheme))) return undefined;
    const slash = target.indexOf('/', scheme + 3);
    if (slash === -1) return undefined;
    target = target.slice(slash);
  }
  const len = target.length;
  let end = 1;
  for (; end < len; end++) {
    const c = target.charCodeAt(end);
    if (c === 47 /* / */ || c === 63 /* ? */) break;
  }
  if (end === 1) return undefined;
  const query = target.indexOf('?', end);
  return {
    providerId: target.slice(1, end),
    path: query === -1 ? target : target.slice(0, query),
    suffix: target.slice(end),
  };
}

/** Provider base path (no trailing slash) + suffix, always starting with `/`. */
export function upstreamPath(basePath: string, suffix: string): string {
  const joined = basePath + suffix;
  return joined.charCodeAt(0) === 47 ? joined : `/${joined}`;
}
