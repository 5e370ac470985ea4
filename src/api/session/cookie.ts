/**
 * The dashboard's session cookie (DESIGN §12): `tokenproxy_session`, HttpOnly, Secure,
 * SameSite=Strict, Path=/. Pure functions; no cookie library for one name.
 */

export const SESSION_COOKIE = 'tokenproxy_session';

/** 32 random bytes in base64url: exactly 43 characters of [A-Za-z0-9_-]. */
const SESSION_VALUE = /^[A-Za-z0-9_-]{43}$/;

/**
 * The session cookie's value from a `Cookie` header, or undefined when it is absent or not a value
 * tokenproxy could have set (so junk never reaches the store).
 */
export function sessionCookieValue(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    return SESSION_VALUE.test(value) ? value : undefined;
  }
  return undefined;
}

/** `Set-Cookie` for a new session; the browser drops it at the absolute expiry at the latest. */
export function sessionSetCookie(value: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${value}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}`;
}

/** `Set-Cookie` that removes the cookie (sign out, or a cookie the server no longer knows). */
export function clearSessionCookie(): string {
  return `${SESSION_COOKIE}=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0`;
}
