/**
 * Names people give things (tokens, keys, API keys, accounts) are shown in the dashboard, e-mails,
 * audit entries and the CLI. A line break there broke the "type the account name" confirmation of
 * `Revoke all tokens` (an input field cannot hold one), and a bidirectional-text override made
 * "evil.exe" read as "exe.live". Such characters are refused at the door, with this rule.
 */

/** What a name may be, in words (error messages, docs). */
export const DISPLAY_NAME_RULE =
  'visible text of 1 to 200 characters: no line breaks (U+2028 and U+2029 included), tabs or other ' +
  'control characters, no bidirectional-text controls (such as U+200E, U+200F, U+202A to U+202E, ' +
  'U+2066 to U+2069), and not only spaces or invisible characters';

/**
 * For JSON Schema `pattern` (compiled with the `u` flag, as Ajv does): at least one character that is
 * neither white space nor an invisible format character, and none that is a control, a
 * bidirectional control or a line or paragraph separator.
 */
export const DISPLAY_NAME_PATTERN = '^(?=[\\s\\S]*[^\\s\\p{Cf}])[^\\p{Cc}\\p{Bidi_Control}\\p{Zl}\\p{Zp}]*$';

const PATTERN = new RegExp(DISPLAY_NAME_PATTERN, 'u');

/** Undefined for an acceptable name; otherwise DISPLAY_NAME_RULE's reason it is not. */
export function displayNameProblem(name: string): string | undefined {
  if (name.length < 1 || name.length > 200 || !PATTERN.test(name)) return DISPLAY_NAME_RULE;
  return undefined;
}
