/**
 * Paths that could mean something else to a server behind the provider's front door than to us
 * (DESIGN §4: nothing in a request may steer it elsewhere). A `..` segment could climb out of a
 * custom provider's base path (https://gw.example/openai); servers and frameworks disagree on
 * how often they percent-decode, whether `\` separates segments (IIS, some Java stacks) and whether
 * `;` starts a parameter (`..;/` climbs on Tomcat and Spring). SDKs and browsers never send any of
 * these, so they are refused, not normalised. Pure string work, tested with a table.
 */

/** Decoding rounds before a path that still decodes further is refused outright. */
const MAX_DECODES = 4;

/** True when the path (without query) has a segment that is unsafe to forward (see above). */
export function unsafePath(path: string): boolean {
  // The common case: nothing that could decode into or be a dot segment or a backslash.
  if (!path.includes('.') && !path.includes('%') && !path.includes('\\')) return false;
  let decoded = path;
  for (let round = 0; ; round++) {
    if (hasUnsafeSegment(decoded)) return true;
    if (!decoded.includes('%')) return false;
    const next = percentDecode(decoded);
    if (next === decoded) return false;
    if (round === MAX_DECODES) return true;
    decoded = next;
  }
}

/** One segment, split on `/` (a decoded `%2f` splits too): `.`, `..`, `.;…`, `..;…`, or any `\`. */
function hasUnsafeSegment(path: string): boolean {
  if (path.includes('\\')) return true;
  for (const segment of path.split('/')) {
    if (segment === '.' || segment === '..') return true;
    if (segment.startsWith('.;') || segment.startsWith('..;')) return true;
  }
  return false;
}

const PERCENT = /%([0-9A-Fa-f]{2})/g;

/**
 * One round of percent-decoding, byte by byte (latin1) so that a malformed sequence or invalid UTF-8
 * cannot make decoding throw, and what is not `%XX` stays as it is.
 */
function percentDecode(value: string): string {
  return value.replace(PERCENT, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
