/**
 * The Node.js releases tokenproxy runs on, as package.json's `engines` says: the floor of each LTS
 * line, and any later major. The floors are where `respond` on an HTTP/2 stream takes a raw header list
 * (older releases throw on every HTTP/2 answer); Node 20 and 23 are past their end of life. Checked
 * by bin/tokenproxy before anything else loads, so an old Node gets one sentence instead of a failure
 * on the first HTTP/2 request (or, on Node 20, a native addon's load error).
 */
export const NODE_FLOORS: readonly (readonly [major: number, minor: number])[] = [
  [22, 20],
  [24, 7],
];

/** Why this Node.js release cannot run tokenproxy and what to do, or undefined when it can. */
export function nodeSupportProblem(version: string): string | undefined {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  if (major !== undefined && minor !== undefined && supported(major, minor)) return undefined;
  const floors = NODE_FLOORS.map(([m, n]) => `${m}.${n}`);
  return (
    `tokenproxy needs Node.js ${floors.join(' or later on its line, or ')} or later; ` +
    `this is Node.js ${version}. Install a current LTS release (https://nodejs.org), then run npm ci again.`
  );
}

function supported(major: number, minor: number): boolean {
  for (const [line, floor] of NODE_FLOORS) if (major === line) return minor >= floor;
  const newest = NODE_FLOORS[NODE_FLOORS.length - 1];
  return newest !== undefined && major > newest[0];
}
