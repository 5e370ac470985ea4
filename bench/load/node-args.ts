/**
 * Extra node flags from the environment variable `name` (space-separated), for diagnosis runs:
 * BENCH_PROXY_NODE_ARGS for tokenproxy, BENCH_REFERENCE_NODE_ARGS for the forwarder and the relay.
 */
export function diagnosisNodeArgs(name: string): string[] {
  const extra = process.env[name]?.trim();
  return extra === undefined || extra === '' ? [] : extra.split(/\s+/);
}
