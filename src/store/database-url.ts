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

/** The URL's password (as written and decoded, and a `password=` parameter): kept out of messages. */
export function urlSecrets(url: string): string[] {
  try {
    const parsed = new URL(url);
    const secrets = [
      parsed.password,
      decodeURIComponent(parsed.password),
      parsed.searchParams.get('password') ?? '',
    ];
    return secrets.filter((secret) => secret.length > 0);
  } catch {
    return [];
  }
}
