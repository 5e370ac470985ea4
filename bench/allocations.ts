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

/** Sampled bytes: in all, under a tokenproxy frame, and per site (`owner  → allocating frame`). */
export interface AllocationTally {
  readonly total: number;
  readonly tokenproxy: number;
  readonly sites: Map<string, number>;
}

function frameName(cf: CallFrame): string {
  const where = cf.url.replace(/^.*\/(node_modules|dist)\//, '$1/');
  return `${cf.functionName || '(anonymous)'} ${where}:${cf.lineNumber + 1}`;
}

/** `ownUrlPrefix`: where tokenproxy's compiled modules are, as a file URL ending in `/dist/`. */
export function tallyAllocations(head: SamplingNode, ownUrlPrefix: string): AllocationTally {
  const sites = new Map<string, number>();
  let total = 0;
  let tokenproxy = 0;
  const walk = (node: SamplingNode, owner: string | null): void => {
    const cf = node.callFrame;
    const own = cf.url.startsWith(ownUrlPrefix) ? frameName(cf) : owner;
    if (node.selfSize > 0) {
      total += node.selfSize;
      if (own !== null) {
        tokenproxy += node.selfSize;
        const leaf = frameName(cf);
        const site = leaf === own ? own : `${own}  → ${leaf}`;
        sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
      }
    }
    for (const child of node.children) walk(child, own);
  };
  walk(head, null);
  return { total, tokenproxy, sites };
}
