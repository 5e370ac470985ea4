/**
 * A PostgreSQL URL for messages: without user, password or query (which may carry `password=`).
 * Apart from the dialect, so that what names the database in an error does not load the driver.
 */
export function redactDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return 'postgres://(unparseable URL)';
  }
}
