/**
 * How a value a client sent (its Origin header, its path) is shown to a person in an alert e-mail.
 * Whoever sends a request with a token chooses these bytes, and the e-mail comes from tokenproxy's
 * own address: free text there ("… please visit https://evil.example/reset") reads as ours, and mail
 * clients make links of it. Only what has the value's shape is shown; the rest is described, and the
 * anomaly log keeps the bytes as sent.
 */

/** Longer origins exist only in forged requests (a host name is at most 253 characters). */
const MAX_ORIGIN = 300;
const MAX_PATH = 120;
/** White space, controls and invisible format characters (bidirectional overrides among them). */
const UNSHOWN = /[\s\p{Cc}\p{Cf}]/u;

/** An origin exactly as a browser serializes one (`scheme://host[:port]`), else a description. */
export function shownOrigin(sent: string): string {
  if (sent.length <= MAX_ORIGIN && !UNSHOWN.test(sent)) {
    try {
      const url = new URL(sent);
      if (url.origin !== 'null' && url.origin === sent.toLowerCase()) return sent;
    } catch {
      // described below
    }
  }
  return `(not an origin: a header of ${sent.length} characters, shown as sent in the anomaly log)`;
}

/** A path without spaces, control or format characters, cut to MAX_PATH characters; else a description. */
export function shownPath(sent: string): string {
  if (UNSHOWN.test(sent)) {
    return `(a path of ${sent.length} characters with spaces or control characters; see the anomaly log)`;
  }
  return sent.length > MAX_PATH ? `${sent.slice(0, MAX_PATH)}… (${sent.length} characters)` : sent;
}
