import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../bench/settings.js';

describe('parseArgs', () => {
  it.each([
    [[], { perf: false, profile: false, only: 9 }],
    [['--only', 'cpu', '--perf'], { perf: true, profile: false, only: 1 }],
    [['--perf'], { perf: true, profile: false, only: 9 }],
    [['--profile', '--only', 'cpu,steady'], { perf: false, profile: true, only: 2 }],
  ])('%j', (argv, want) => {
    const s = parseArgs(argv);
    expect({ perf: s.perf, profile: s.profile, only: s.only.size }).toEqual(want);
  });

  it.each([
    [
      ['--only', 'steady', '--perf'],
      '--perf samples the cpu phase: add cpu to --only (e.g. --only cpu or --only steady,cpu)',
    ],
    [['--only', 'cpus'], '--only: unknown phase "cpus"'],
  ])('%j is refused', (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(message);
  });
});
