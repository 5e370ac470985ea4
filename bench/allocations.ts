/**
 * Reads a V8 sampling heap profile (`HeapProfiler.stopSampling`) for `npm run bench:alloc`: each
 * sample is charged to the innermost tokenproxy function on its stack (under `dist/`), so what Node or
 * undici allocate on tokenproxy's behalf counts against the call that asked for it. Samples with no
 * tokenproxy frame are Node's and undici's own work for the connection, which any Node proxy pays.
 */

export interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

export interface SamplingNode {
  readonly callFrame: CallFrame;
  readonly selfSize: number;
  readonly children: readonly SamplingNode[];
}

/**
 * Sampled bytes: in all, under a tokenproxy frame, per site (`owner  → allocating frame`), and per
 * allocating frame whoever's it is (`leaves`: Node's and undici's own work included, and "(V8 API)",
 * what Node's C++ allocates with no JavaScript on the stack, such as node:http2's header strings).
 */
export interface AllocationTally {
  readonly total: number;
  readonly tokenproxy: number;
  readonly sites: Map<string, number>;
  readonly leaves: Map<string, number>;
}

function frameName(cf: CallFrame): string {
  // V8's own entries ("(V8 API)", "(root)") have no script.
  if (cf.url === '') return cf.functionName;
  // A dependency's own `dist/` folder must not read as tokenproxy's.
  const where = cf.url.includes('/node_modules/')
    ? cf.url.replace(/^.*\/node_modules\//, 'node_modules/')
    : cf.url.replace(/^.*\/dist\//, 'dist/');
  return `${cf.functionName || '(anonymous)'} ${where}:${cf.lineNumber + 1}`;
}

/** `ownUrlPrefix`: where tokenproxy's compiled modules are, as a file URL ending in `/dist/`. */
export function tallyAllocations(head: SamplingNode, ownUrlPrefix: string): AllocationTally {
  const sites = new Map<string, number>();
  const leaves = new Map<string, number>();
  let total = 0;
  let tokenproxy = 0;
  const walk = (node: SamplingNode, owner: string | null): void => {
    const cf = node.callFrame;
    const own = cf.url.startsWith(ownUrlPrefix) ? frameName(cf) : owner;
    if (node.selfSize > 0) {
      total += node.selfSize;
      const leaf = frameName(cf);
      leaves.set(leaf, (leaves.get(leaf) ?? 0) + node.selfSize);
      if (own !== null) {
        tokenproxy += node.selfSize;
        const site = leaf === own ? own : `${own}  → ${leaf}`;
        sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
      }
    }
    for (const child of node.children) walk(child, own);
  };
  walk(head, null);
  return { total, tokenproxy, sites, leaves };
}
