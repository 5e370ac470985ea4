/**
 * The fields of the config file's nested objects (`providers`, `plans`, `prices`): which are known,
 * which must be there, and what each holds. Pure; the callers turn a problem into their own
 * ConfigError, which names the entry and shows an example of the right form.
 */

/** A field's rule: what the value must be (to follow `must be`) when it does not fit, else undefined. */
export type FieldRule = (value: unknown) => string | undefined;

export interface FieldSpec {
  readonly rule: FieldRule;
  readonly required: boolean;
}

export type ObjectShape = Readonly<Record<string, FieldSpec>>;

/** The first thing wrong, in the order a reader fixes them: not an object, unknown, missing, bad. */
export type ShapeProblem =
  | { readonly kind: 'not_object' }
  | { readonly kind: 'unknown_fields'; readonly fields: readonly string[] }
  | { readonly kind: 'missing'; readonly field: string }
  | { readonly kind: 'invalid'; readonly field: string; readonly expected: string };

export function checkShape(value: unknown, shape: ObjectShape): ShapeProblem | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { kind: 'not_object' };
  const record = value as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !Object.hasOwn(shape, key));
  if (unknown.length > 0) return { kind: 'unknown_fields', fields: unknown };
  for (const [field, spec] of Object.entries(shape)) {
    const fieldValue = Object.hasOwn(record, field) ? record[field] : undefined;
    if (fieldValue === undefined) {
      if (spec.required) return { kind: 'missing', field };
      continue;
    }
    const expected = spec.rule(fieldValue);
    if (expected !== undefined) return { kind: 'invalid', field, expected };
  }
  return undefined;
}

/** The problem as words that follow the entry's name: `unknown field "x"`, `field "auth" is missing`, … */
export function describeProblem(problem: ShapeProblem): string {
  switch (problem.kind) {
    case 'not_object':
      return 'is not an object';
    case 'unknown_fields':
      return `unknown field "${problem.fields.join('", "')}"`;
    case 'missing':
      return `field "${problem.field}" is missing`;
    case 'invalid':
      return `field "${problem.field}" must be ${problem.expected}`;
  }
}

export const text: FieldRule = (value) => (typeof value === 'string' ? undefined : 'a string');

export function numberIn(min: number, max: number): FieldRule {
  return (value) =>
    typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max
      ? undefined
      : `a number from ${min} to ${max}`;
}

/** A whole number from `min` up, or null for "no cap". */
export function countOrNull(min: number): FieldRule {
  return (value) =>
    value === null || (Number.isSafeInteger(value) && (value as number) >= min)
      ? undefined
      : `an integer ≥ ${min} or null`;
}
