/** Small helpers of the bench driver: logging, /proc readings, HTTPS calls to the proxy under test. */
import { parseGcTotals, type GcTotals } from './gc.js';
import { BenchFailure } from './h2load.js';
import { execFileSync } from 'node:child_process';
import { request } from 'node:https';

export function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function rssMb(pid: number): number {
  const status = execFileSync('cat', [`/proc/${pid}/status`], { encoding: 'utf8' });
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  if (kb === undefined) throw new BenchFailure(`no VmRSS for pid ${pid}`);
  return Number(kb) / 1024;
}

export const CLK_TCK = 100;

/** utime + stime of a process, in clock ticks (1/CLK_TCK s). */
export function cpuTicks(pid: number): number {
  const stat = execFileSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' });
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5), counted from after the command name (which is field 2).
  return Number(fields[11]) + Number(fields[12]);
}

export function httpsJson(
  url: string,
  method: string,
  ca: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const sent = payload === undefined ? headers : { ...headers, 'content-type': 'application/json' };
  return httpsText(url, method, ca, sent, payload).then(({ status, text }) => {
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status, json };
  });
}

export function httpsText(
  url: string,
  method: string,
  ca: string,
  headers: Record<string, string>,
  payload?: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolvePromise, reject) => {
    const req = request(url, { method, ca, agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (s: string) => (text += s));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** The proxy's garbage collections so far, from its /metrics (see gc.ts). */
export async function gcTotals(metrics: { readonly url: string; readonly ca: string }): Promise<GcTotals> {
  const { status, text } = await httpsText(metrics.url, 'GET', metrics.ca, {});
  if (status !== 200) throw new BenchFailure(`GET ${metrics.url} answered ${status}`);
  return parseGcTotals(text);
}

export function field(value: unknown, name: string): string {
  const v = (value as Record<string, unknown> | null)?.[name];
  if (typeof v !== 'string')
    throw new BenchFailure(`expected string field "${name}" in ${JSON.stringify(value)}`);
  return v;
}
