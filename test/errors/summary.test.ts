import { describe, expect, it } from 'vitest';
import { errorName, errorSummary } from '../../src/errors/summary.js';

const withCode = Object.assign(new Error('connect ECONNREFUSED postgres://u:secret@db/x'), {
  code: 'ECONNREFUSED',
});

describe('error summaries for log lines', () => {
  it.each([
    [new TypeError('value sk-live-123 is bad'), 'TypeError', { name: 'TypeError' }],
    [withCode, 'Error', { name: 'Error', code: 'ECONNREFUSED' }],
    [Object.assign(new Error('x'), { code: 42 }), 'Error', { name: 'Error' }],
    ['a thrown string', 'string', { name: 'string' }],
    [undefined, 'undefined', { name: 'undefined' }],
  ])('%#: never the message', (err, name, summary) => {
    expect(errorName(err)).toBe(name);
    expect(errorSummary(err)).toEqual(summary);
    expect(JSON.stringify(errorSummary(err))).not.toMatch(/secret|sk-live|thrown/);
  });
});
