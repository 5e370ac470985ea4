/**
 * The URL with any password replaced, for log lines, error messages and the start banner. Apart from
 * redis-connection.ts so that printing it does not load the Redis client: a server without `redis`
 * never imports it.
 */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable redis URL)';
  }
}
