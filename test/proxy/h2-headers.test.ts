import { describe, expect, it } from 'vitest';
import { h2RawHead } from '../../src/proxy/h2-stream.js';

describe("h2RawHead: a flat header list as respond's raw list", () => {
  it.each([
    { status: 200, flat: [], want: [':status', '200'] },
    {
      status: 403,
      flat: ['content-type', 'application/json', 'cache-control', 'no-store'],
      want: [':status', '403', 'content-type', 'application/json', 'cache-control', 'no-store'],
    },
    {
      status: 200,
      flat: ['set-cookie', 'a=1', 'x-id', 'r1', 'set-cookie', 'b=2'],
      want: [':status', '200', 'set-cookie', 'a=1', 'x-id', 'r1', 'set-cookie', 'b=2'],
    },
    {
      status: 204,
      flat: ['vary', 'Origin', 'vary', 'Accept'],
      want: [':status', '204', 'vary', 'Origin', 'vary', 'Accept'],
    },
  ])('$status with $flat.length names and values', ({ status, flat, want }) => {
    expect(h2RawHead(status, flat)).toEqual(want);
  });

  it('makes a new list each time and leaves the one given as it was (Node appends date to it)', () => {
    const flat = ['set-cookie', 'a=1', 'set-cookie', 'b=2'];
    const first = h2RawHead(200, flat);
    first.push('date', 'now');
    expect(h2RawHead(200, flat)).toEqual([':status', '200', 'set-cookie', 'a=1', 'set-cookie', 'b=2']);
    expect(flat).toEqual(['set-cookie', 'a=1', 'set-cookie', 'b=2']);
  });
});
