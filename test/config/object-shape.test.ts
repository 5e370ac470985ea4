import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  checkShape,
  countOrNull,
  describeProblem,
  numberIn,
  text,
  type ObjectShape,
} from '../../src/config/object-shape.js';

const SHAPE = {
  name: { rule: text, required: true },
  price: { rule: numberIn(0, 10), required: true },
  cap: { rule: countOrNull(0), required: false },
} as const satisfies ObjectShape;

describe('checkShape', () => {
  it.each([
    ['fits', { name: 'a', price: 0 }, undefined],
    ['fits, with the optional field', { name: 'a', price: 10, cap: 3 }, undefined],
    ['null is "no cap"', { name: 'a', price: 1.5, cap: null }, undefined],
    ['an array', [], 'is not an object'],
    ['null', null, 'is not an object'],
    ['a string', 'x', 'is not an object'],
    ['unknown fields, all named', { name: 'a', price: 1, x: 1, y: 2 }, 'unknown field "x", "y"'],
    ['a required field missing', { price: 1 }, 'field "name" is missing'],
    ['a wrong type', { name: 1, price: 1 }, 'field "name" must be a string'],
    ['a number out of range', { name: 'a', price: 11 }, 'field "price" must be a number from 0 to 10'],
    ['a negative number', { name: 'a', price: -1 }, 'field "price" must be a number from 0 to 10'],
    ['not a finite number', { name: 'a', price: Number.NaN }, 'field "price" must be a number from 0 to 10'],
    ['a number as text', { name: 'a', price: '1' }, 'field "price" must be a number from 0 to 10'],
    [
      'a fraction where a count goes',
      { name: 'a', price: 1, cap: 1.5 },
      'field "cap" must be an integer ≥ 0 or null',
    ],
    [
      'a count past 2^53',
      { name: 'a', price: 1, cap: 2 ** 53 },
      'field "cap" must be an integer ≥ 0 or null',
    ],
    ['a negative count', { name: 'a', price: 1, cap: -1 }, 'field "cap" must be an integer ≥ 0 or null'],
  ])('%s', (_case, value, problem) => {
    const checked = checkShape(value, SHAPE);
    expect(checked.ok ? undefined : describeProblem(checked.problem)).toBe(problem);
  });

  it('does not take inherited keys for fields', () => {
    const value = Object.assign(Object.create({ name: 'inherited' }) as object, { price: 1 });
    expect(checkShape(value, SHAPE)).toEqual({ ok: false, problem: { kind: 'missing', field: 'name' } });
  });

  it('hands back the same object, typed by the shape', () => {
    const value: unknown = { name: 'a', price: 2 };
    const checked = checkShape(value, SHAPE);
    if (!checked.ok) throw new Error(describeProblem(checked.problem));
    expect(checked.value).toBe(value);
    expectTypeOf(checked.value.name).toEqualTypeOf<string>();
    expectTypeOf(checked.value.price).toEqualTypeOf<number>();
    expectTypeOf(checked.value.cap).toEqualTypeOf<number | null | undefined>();
  });
});
