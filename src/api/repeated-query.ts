import { TokenProxyError } from '../errors/tokenproxy-error.js';

/**
 * A query parameter given more than once (`?status=4xx&status=5xx`) arrives as an array, which no
 * parameter of this API takes; the schema would then say "expected string", which names the wrong
 * mistake. This says it plainly, before validation.
 */
export function repeatedQueryParameter(query: unknown): TokenProxyError | undefined {
  if (query === null || typeof query !== 'object') return undefined;
  for (const [name, value] of Object.entries(query)) {
    if (Array.isArray(value)) {
      return new TokenProxyError(
        'invalid_parameter',
        `Query parameter "${name}" is given ${value.length} times; give it once. Filters do not take several values.`,
        { param: name },
      );
    }
  }
  return undefined;
}
