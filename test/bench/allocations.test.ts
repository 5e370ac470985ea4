import { describe, expect, it } from 'vitest';
import { tallyAllocations, type SamplingNode } from '../../bench/allocations.js';

const node = (
  functionName: string,
  url: string,
  selfSize: number,
  children: SamplingNode[] = [],
): SamplingNode => ({
  callFrame: { functionName, url, lineNumber: 9 },
  selfSize,
  children,
});

const TP = 'file:///srv/tokenproxy/dist/proxy/relay.js';
const NODE = 'node:_http_outgoing';
const BENCH = 'file:///srv/tokenproxy/dist-bench/bench/forwarder.js';
/** A dependency whose own path has a `dist` folder is not tokenproxy either. */
const DEP = 'file:///srv/tokenproxy/node_modules/pino/dist/x.js';

describe('tallyAllocations', () => {
  it.each([
    {
      name: 'a sample with no tokenproxy frame counts in the total only',
      tree: node('(root)', '', 0, [node('processHeader', NODE, 100)]),
      total: 100,
      tokenproxy: 0,
      sites: {},
      leaves: { 'processHeader node:_http_outgoing:10': 100 },
    },
    {
      name: "what Node's C++ allocates with no JavaScript on the stack is a leaf of its own",
      tree: node('(root)', '', 0, [node('(V8 API)', '', 64), node('onResponseStart', TP, 8)]),
      total: 72,
      tokenproxy: 8,
      sites: { 'onResponseStart dist/proxy/relay.js:10': 8 },
      leaves: { '(V8 API)': 64, 'onResponseStart dist/proxy/relay.js:10': 8 },
    },
    {
      name: "Node's allocation under a tokenproxy call is charged to that call",
      tree: node('(root)', '', 0, [node('onResponseStart', TP, 10, [node('processHeader', NODE, 300)])]),
      total: 310,
      tokenproxy: 310,
      sites: {
        'onResponseStart dist/proxy/relay.js:10': 10,
        'onResponseStart dist/proxy/relay.js:10  → processHeader node:_http_outgoing:10': 300,
      },
      leaves: { 'onResponseStart dist/proxy/relay.js:10': 10, 'processHeader node:_http_outgoing:10': 300 },
    },
    {
      name: 'the innermost tokenproxy frame owns it, and the bench is not tokenproxy',
      tree: node('(root)', '', 0, [
        node('handle', TP, 0, [
          node('start', TP, 0, [node('dispatch', 'file:///x/node_modules/undici/a.js', 40)]),
        ]),
        node('handler', BENCH, 0, [node('write', NODE, 7)]),
        node('write', DEP, 3),
      ]),
      total: 50,
      tokenproxy: 40,
      sites: { 'start dist/proxy/relay.js:10  → dispatch node_modules/undici/a.js:10': 40 },
      leaves: {
        'dispatch node_modules/undici/a.js:10': 40,
        'write node:_http_outgoing:10': 7,
        'write node_modules/pino/dist/x.js:10': 3,
      },
    },
  ])('$name', ({ tree, total, tokenproxy, sites, leaves }) => {
    const tally = tallyAllocations(tree, 'file:///srv/tokenproxy/dist/');
    expect(tally.total).toBe(total);
    expect(tally.tokenproxy).toBe(tokenproxy);
    expect(Object.fromEntries(tally.sites)).toEqual(sites);
    expect(Object.fromEntries(tally.leaves)).toEqual(leaves);
  });
});
