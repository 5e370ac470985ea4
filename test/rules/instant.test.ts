import { describe, expect, it } from 'vitest';
import { storedInstant } from '../../src/rules/instant.js';

describe('storedInstant: what the store can keep and order as text', () => {
  it.each([
    ['1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z'],
    ['2026-11-29T12:00:00+02:00', '2026-11-29T10:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['9999-12-31T23:59:59.999-10:00', undefined],
    ['1969-12-31T23:59:59.999Z', undefined],
    ['0001-01-01T00:00:00Z', undefined],
  ])('%s → %s', (text, stored) => {
    expect(storedInstant(Date.parse(text))).toBe(stored);
  });
});
