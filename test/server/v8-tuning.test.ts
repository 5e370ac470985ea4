import { describe, expect, it } from 'vitest';
import { serveRestartFlags, servePoolSize } from '../../src/server/v8-tuning.js';

const BOTH = ['--max-semi-space-size=8', '--v8-pool-size=1'];

// `serve` restarts itself once with its start-time flags, each unless the operator chose it.
describe('serveRestartFlags', () => {
  it.each([
    { name: 'plain node, 2 CPUs', execArgv: [], nodeOptions: undefined, cpus: 2, want: BOTH },
    {
      name: 'other flags only',
      execArgv: ['--enable-source-maps'],
      nodeOptions: '--trace-warnings',
      cpus: 2,
      want: BOTH,
    },
    { name: 'already restarted', execArgv: BOTH, nodeOptions: undefined, cpus: 2, want: [] },
    {
      name: 'restarted by an older version (semi-space only)',
      execArgv: ['--max-semi-space-size=8'],
      nodeOptions: undefined,
      cpus: 1,
      want: ['--v8-pool-size=1'],
    },
    {
      name: 'operator semi-space, separate value',
      execArgv: ['--max-semi-space-size', '32'],
      nodeOptions: '',
      cpus: 8,
      want: ['--v8-pool-size=4'],
    },
    {
      name: 'operator NODE_OPTIONS, both',
      execArgv: [],
      nodeOptions: '--foo  --max-semi-space-size=2 --v8-pool-size=3',
      cpus: 2,
      want: [],
    },
    {
      name: 'operator pool size on the command line',
      execArgv: ['--v8-pool-size', '2'],
      nodeOptions: undefined,
      cpus: 16,
      want: ['--max-semi-space-size=8'],
    },
    {
      name: 'longer flags of other names',
      execArgv: ['--max-semi-space-size-x=1', '--v8-pool-size-y=2'],
      nodeOptions: undefined,
      cpus: 3,
      want: ['--max-semi-space-size=8', '--v8-pool-size=2'],
    },
  ])('$name → $want', ({ execArgv, nodeOptions, cpus, want }) => {
    expect(serveRestartFlags(execArgv, nodeOptions, cpus)).toEqual(want);
  });
});

// One CPU is left to the thread serving requests; never 0 (Node's "choose for me"), never above 4.
describe('servePoolSize', () => {
  it.each([
    [1, 1],
    [2, 1],
    [3, 2],
    [4, 3],
    [5, 4],
    [64, 4],
    [0, 1],
  ])('%i CPUs → %i helper threads', (cpus, want) => {
    expect(servePoolSize(cpus)).toBe(want);
  });
});
