/**
 * Echo a caller's value inside an error message. Values here are host names, IPs and windows (never
 * secrets), but they come from callers, so keep them short and quoted to make odd characters visible.
 */
export function quote(value: string, max = 80): string {
  return JSON.stringify(value.length > max ? `${value.slice(0, max)}\u2026` : value);
}

const WHITESPACE = /\s/u;

/** Whitespace of any kind (Unicode too) or a C0/C1 control character. */
export function hasSpaceOrControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return WHITESPACE.test(value);
}
