/**
 * What of a caught error goes into a log line: its name, and its code when it has one. Never the
 * message: messages of lower layers can quote what they were given (a URL with a password, a value).
 */
export function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

export function errorSummary(err: unknown): { name: string; code?: string } {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' ? { name: err.name, code } : { name: err.name };
  }
  return { name: typeof err };
}
