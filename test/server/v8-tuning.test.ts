import { describe, expect, it } from 'vitest';
import { needsSemiSpaceRestart } from '../../src/server/v8-tuning.js';

// `serve` restarts itself once with an 8 MB semi-space unless the operator chose a size.
describe('needsSemiSpaceRestart', () => {
  it.each([
    { name: 'plain node', execArgv: [], nodeOptions: undefined, want: true },
    {
      name: 'other flags only',
      execArgv: ['--enable-source-maps'],
      nodeOptions: '--trace-warnings',
      want: true,
    },
    { name: 'already restarted', execArgv: ['--max-semi-space-size=8'], nodeOptions: undefined, want: false },
    {
      name: 'operator flag, separate value',
      execArgv: ['--max-semi-space-size', '32'],
      nodeOptions: '',
      want: false,
    },
    {
      name: 'operator NODE_OPTIONS',
      execArgv: [],
      nodeOptions: '--foo  --max-semi-space-size=2',
      want: false,
    },
    {
      name: 'a longer flag of another name',
      execArgv: ['--max-semi-space-size-x=1'],
      nodeOptions: undefined,
      want: true,
    },
  ])('$name → $want', ({ execArgv, nodeOptions, want }) => {
    expect(needsSemiSpaceRestart(execArgv, nodeOptions)).toBe(want);
  });
});
