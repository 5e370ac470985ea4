import { describe, expect, it } from 'vitest';
import { h2Headers } from '../../src/proxy/h2-stream.js';

describe('h2Headers: a flat header list as the HTTP/2 header object', () => {
  it.each([
    { status: 200, flat: [], want: { ':status': 200 } },
    {
      status: 403,
      flat: ['content-type', 'application/json', 'cache-control', 'no-store'],
      want: { ':status': 403, 'content-type': 'application/json', 'cache-control': 'no-store' },
    },
    {
      status: 200,
      flat: ['set-cookie', 'a=1', 'x-id', 'r1', 'set-cookie', 'b=2', 'set-cookie', 'c=3'],
      want: { ':status': 200, 'set-cookie': ['a=1', 'b=2', 'c=3'], 'x-id': 'r1' },
    },
    {
      status: 204,
      flat: ['vary', 'Origin', 'vary', 'Accept'],
      want: { ':status': 204, vary: ['Origin', 'Accept'] },
    },
  ])('$status with $flat.length names and values', ({ status, flat, want }) => {
    expect(h2Headers(status, flat)).toEqual(want);
  });

  it('leaves the flat list as it was', () => {
    const flat = ['set-cookie', 'a=1', 'set-cookie', 'b=2'];
    h2Headers(200, flat);
    expect(flat).toEqual(['set-cookie', 'a=1', 'set-cookie', 'b=2']);
  });
});
