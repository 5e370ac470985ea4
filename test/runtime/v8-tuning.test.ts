import { describe, expect, it } from 'vitest';
import { serveCpuShare, serveRestartFlags, servePoolSize } from '../../src/runtime/v8-tuning.js';

const GROWING = '--heap-growing-percent=100';
const NO_REDUCER = '--no-memory-reducer';
const ALL = ['--max-semi-space-size=8', '--v8-pool-size=1', GROWING, NO_REDUCER];
const NO_PARALLEL = '--no-parallel-scavenge';

// `serve` restarts itself once with its start-time flags, each unless the operator chose it.
describe('serveRestartFlags', () => {
  it.each([
    { name: 'plain node, 2 CPUs', execArgv: [], nodeOptions: undefined, cpus: 2, want: ALL },
    {
      name: 'other flags only',
      execArgv: ['--enable-source-maps'],
      nodeOptions: '--trace-warnings',
      cpus: 2,
      want: ALL,
    },
    { name: 'already restarted', execArgv: ALL, nodeOptions: undefined, cpus: 2, want: [] },
    {
      name: 'restarted by an older version (semi-space only)',
      execArgv: ['--max-semi-space-size=8'],
      nodeOptions: undefined,
      cpus: 1,
      want: ['--v8-pool-size=1', GROWING, NO_REDUCER, NO_PARALLEL],
    },
    {
      name: 'restarted by an older version (semi-space and pool)',
      execArgv: ['--max-semi-space-size=8', '--v8-pool-size=1'],
      nodeOptions: undefined,
      cpus: 2,
      want: [GROWING, NO_REDUCER],
    },
    {
      name: 'restarted by an older version (three flags)',
      execArgv: ['--max-semi-space-size=8', '--v8-pool-size=1', GROWING],
      nodeOptions: undefined,
      cpus: 2,
      want: [NO_REDUCER],
    },
    {
      name: 'operator semi-space, separate value',
      execArgv: ['--max-semi-space-size', '32'],
      nodeOptions: '',
      cpus: 8,
      want: ['--v8-pool-size=4', GROWING, NO_REDUCER],
    },
    {
      // Node refuses --heap-growing-percent and --memory-reducer in NODE_OPTIONS: only node's command
      // line can set them.
      name: 'operator NODE_OPTIONS and command line, all four',
      execArgv: ['--heap-growing-percent=50', '--memory-reducer'],
      nodeOptions: '--foo  --max-semi-space-size=2 --v8-pool-size=3',
      cpus: 2,
      want: [],
    },
    {
      name: 'operator growing factor only',
      execArgv: ['--heap-growing-percent=30'],
      nodeOptions: undefined,
      cpus: 2,
      want: ['--max-semi-space-size=8', '--v8-pool-size=1', NO_REDUCER],
    },
    {
      name: "operator keeps V8's memory reducer",
      execArgv: ['--memory-reducer'],
      nodeOptions: undefined,
      cpus: 2,
      want: ['--max-semi-space-size=8', '--v8-pool-size=1', GROWING],
    },
    {
      name: 'operator flags spelled with underscores, as V8 accepts them',
      execArgv: ['--no_memory_reducer', '--heap_growing_percent=40'],
      nodeOptions: '--max_semi_space_size=4',
      cpus: 2,
      want: ['--v8-pool-size=1'],
    },
    {
      name: 'operator pool size on the command line',
      execArgv: ['--v8-pool-size', '2'],
      nodeOptions: undefined,
      cpus: 16,
      want: ['--max-semi-space-size=8', GROWING, NO_REDUCER],
    },
    {
      name: 'longer flags of other names',
      execArgv: [
        '--max-semi-space-size-x=1',
        '--v8-pool-size-y=2',
        '--heap-growing-percent-z=3',
        '--memory-reducer-for-small-heaps',
      ],
      nodeOptions: undefined,
      cpus: 3,
      want: ['--max-semi-space-size=8', '--v8-pool-size=2', GROWING, NO_REDUCER],
    },
    {
      name: '8 CPUs shared by 4 workers',
      execArgv: [],
      nodeOptions: undefined,
      cpus: 8,
      workers: 4,
      want: ['--max-semi-space-size=8', '--v8-pool-size=1', GROWING, NO_REDUCER],
    },
    {
      name: 'one CPU (taskset, a cpuset)',
      execArgv: [],
      nodeOptions: undefined,
      cpus: 1,
      want: [...ALL, NO_PARALLEL],
    },
    {
      name: 'one CPU, already restarted',
      execArgv: [...ALL, NO_PARALLEL],
      nodeOptions: undefined,
      cpus: 1,
      want: [],
    },
    {
      name: 'one CPU, restarted by an older version (four flags)',
      execArgv: ALL,
      nodeOptions: undefined,
      cpus: 1,
      want: [NO_PARALLEL],
    },
    {
      name: "one CPU, operator keeps V8's parallel scavenge",
      execArgv: ['--parallel-scavenge'],
      nodeOptions: undefined,
      cpus: 1,
      want: ALL,
    },
    {
      name: 'one CPU, operator spells it with underscores',
      execArgv: ['--no_parallel_scavenge'],
      nodeOptions: undefined,
      cpus: 1,
      want: ALL,
    },
    {
      name: '2 CPUs shared by 2 workers: one CPU each',
      execArgv: [],
      nodeOptions: undefined,
      cpus: 2,
      workers: 2,
      want: [...ALL, NO_PARALLEL],
    },
    {
      name: '8 CPUs shared by 3 workers: two each',
      execArgv: [],
      nodeOptions: undefined,
      cpus: 8,
      workers: 3,
      want: ALL,
    },
  ])('$name → $want', ({ execArgv, nodeOptions, cpus, workers, want }) => {
    expect(serveRestartFlags(execArgv, nodeOptions, cpus, workers)).toEqual(want);
  });
});

// Each serving process leaves one CPU of its share to its own thread; never 0 (Node's "choose for
// me"), never above Node's 4.
describe('servePoolSize', () => {
  it.each([
    [1, 1, 1],
    [2, 1, 1],
    [3, 1, 2],
    [4, 1, 3],
    [5, 1, 4],
    [64, 1, 4],
    [0, 1, 1],
    [8, 2, 3],
    [8, 4, 1],
    [8, 8, 1],
    [2, 4, 1],
    [16, 3, 4],
  ])('%i CPUs, %i workers → %i helper threads each', (cpus, workers, want) => {
    expect(servePoolSize(cpus, workers)).toBe(want);
  });
});

// What one serving process may count on: never 0, whatever the machine and the workers.
describe('serveCpuShare', () => {
  it.each([
    [1, 1, 1],
    [2, 1, 2],
    [2, 2, 1],
    [2, 4, 1],
    [0, 1, 1],
    [8, 3, 2],
    [64, 0, 64],
  ])('%i CPUs, %i workers → %i CPUs each', (cpus, workers, want) => {
    expect(serveCpuShare(cpus, workers)).toBe(want);
  });
});
