/**
 * The fields of the config file's nested objects (`providers`, `plans`, `prices`): which are known,
 * which must be there, and what each holds. Pure; the callers turn a problem into their own
 * ConfigError, which names the entry and shows an example of the right form. A shape also types
 * what it accepts, so a caller reads the checked fields without a cast that could drift from it.
 */

/** What a field's value must be: a test that narrows it, and the words for `must be …`. */
export interface FieldRule<T> {
  readonly fits: (value: unknown) => value is T;
  readonly expected: string;
}

export interface FieldSpec<T = unknown> {
  readonly rule: FieldRule<T>;
  readonly required: boolean;
}

export type ObjectShape = Readonly<Record<string, FieldSpec>>;

type FieldType<F> = F extends FieldSpec<infer T> ? T : never;
type RequiredKeys<S extends ObjectShape> = {
  [K in keyof S]: S[K]['required'] extends true ? K : never;
}[keyof S];

/** The object a shape accepts: required fields present, the others possibly absent. */
export type Shaped<S extends ObjectShape> = {
  readonly [K in RequiredKeys<S>]: FieldType<S[K]>;
} & {
  readonly [K in Exclude<keyof S, RequiredKeys<S>>]?: FieldType<S[K]>;
};

/** The first thing wrong, in the order a reader fixes them: not an object, unknown, missing, bad. */
export type ShapeProblem =
  | { readonly kind: 'not_object' }
  | { readonly kind: 'unknown_fields'; readonly fields: readonly string[] }
  | { readonly kind: 'missing'; readonly field: string }
  | { readonly kind: 'invalid'; readonly field: string; readonly expected: string };

export type ShapeCheck<S extends ObjectShape> =
  { readonly ok: true; readonly value: Shaped<S> } | { readonly ok: false; readonly problem: ShapeProblem };

export function checkShape<S extends ObjectShape>(value: unknown, shape: S): ShapeCheck<S> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, problem: { kind: 'not_object' } };
  }
  const record = value as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !Object.hasOwn(shape, key));
  if (unknown.length > 0) return { ok: false, problem: { kind: 'unknown_fields', fields: unknown } };
  for (const [field, spec] of Object.entries(shape)) {
    const fieldValue = Object.hasOwn(record, field) ? record[field] : undefined;
    if (fieldValue === undefined) {
      if (spec.required) return { ok: false, problem: { kind: 'missing', field } };
      continue;
    }
    if (!spec.rule.fits(fieldValue)) {
      return { ok: false, problem: { kind: 'invalid', field, expected: spec.rule.expected } };
    }
  }
  // Every own key is a field of the shape and every field passed its rule's test just above.
  return { ok: true, value: record as Shaped<S> };
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

export const text: FieldRule<string> = {
  fits: (value): value is string => typeof value === 'string',
  expected: 'a string',
};

export function numberIn(min: number, max: number): FieldRule<number> {
  return {
    fits: (value): value is number =>
      typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max,
    expected: `a number from ${min} to ${max}`,
  };
}

/** A whole number from `min` up, or null for "no cap". */
export function countOrNull(min: number): FieldRule<number | null> {
  return {
    fits: (value): value is number | null =>
      value === null || (typeof value === 'number' && Number.isSafeInteger(value) && value >= min),
    expected: `an integer ≥ ${min} or null`,
  };
}
