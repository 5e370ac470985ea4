import { describe, expect, it } from 'vitest';
import { overlapping, parseSchedstat, runByName, type Schedstat } from '../../bench/stall-rules.js';

describe('parseSchedstat', () => {
  it.each([
    ['12345 678 9\n', { runNs: 12345, waitNs: 678, slices: 9 }],
    ['  1 2 3', { runNs: 1, waitNs: 2, slices: 3 }],
    ['1 2', undefined],
    ['', undefined],
    ['a b c', undefined],
  ])('%j → %j', (text, want) => {
    expect(parseSchedstat(text)).toEqual(want);
  });
});

describe('runByName', () => {
  const names = new Map([
    ['10', 'node'],
    ['11', 'V8Worker'],
    ['12', 'V8Worker'],
    ['13', 'WorkerThread'],
  ]);
  const ms = (n: number): number => n * 1e6;
  const toMap = (rows: readonly (readonly [string, number])[]): Map<string, Schedstat> =>
    new Map(rows.map(([tid, runNs]) => [tid, { runNs, waitNs: 0, slices: 0 }]));
  it.each([
    {
      name: 'helpers add up under their shared name; the reading thread is left out',
      before: [
        ['10', 0],
        ['11', ms(1)],
        ['12', ms(2)],
        ['13', 0],
      ],
      after: [
        ['10', ms(50)],
        ['11', ms(4)],
        ['12', ms(5.5)],
        ['13', ms(0.01)],
      ],
      want: { V8Worker: 6.5 },
    },
    {
      name: 'a thread that appeared counts from zero, one unnamed by its id',
      before: [['10', 0]],
      after: [
        ['10', 0],
        ['13', ms(2)],
        ['99', ms(1)],
      ],
      want: { WorkerThread: 2, '99': 1 },
    },
    {
      name: 'a thread that ended counts not at all',
      before: [['11', ms(3)]],
      after: [],
      want: {},
    },
  ] as const)('$name', ({ before, after, want }) => {
    expect(runByName(toMap(before), toMap(after), names, '10', 0.05)).toEqual(want);
  });
});

describe('overlapping', () => {
  const gcs = [
    { start: 0, duration: 5, kind: 1 },
    { start: 10, duration: 2.345, kind: 4 },
    { start: 20, duration: 1, kind: 8 },
  ];
  it.each([
    [
      4,
      11,
      [
        [5, 1],
        [2.35, 4],
      ],
    ],
    [12.5, 19, []],
    [19.5, 30, [[1, 8]]],
  ])('[%d, %d] → %j', (from, to, want) => {
    expect(overlapping(gcs, from, to)).toEqual(want);
  });
});
