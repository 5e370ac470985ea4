import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/tokenproxy', import.meta.url));

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `bin/tokenproxy` to completion (the compiled CLI: `npm test` builds first); `bin` runs
 * another copy of it (a deliberately broken install).
 */
export function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 60_000,
  bin = BIN,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env: cleanEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`tokenproxy ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface ServerProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly apiUrl: string;
  readonly proxyUrl: string;
  /** Everything printed so far. */
  stdout(): string;
  stderr(): string;
  /**
   * SIGTERM, then waits for exit; resolves to the exit code. A process still running after
   * `graceMs` is killed and the call rejects with its last output: a shutdown that hangs fails the
   * test by name and with what the process said, instead of as a hook timeout that leaves it running.
   */
  stop(graceMs?: number): Promise<number | null>;
}

/** Under vitest's 60 s hook timeout, and over the longest drain a test sets (30 s) plus shutdown. */
const STOP_GRACE_MS = 45_000;

/** Starts `tokenproxy serve` on free ports and resolves once both listeners are up. */
export function startServe(
  args: string[],
  env: Record<string, string | undefined> = {},
  options: {
    readonly pinToCpu?: number;
    /** The process's descriptor limit (soft and hard), set by `prlimit` before node starts. */
    readonly nofile?: number;
  } = {},
): Promise<ServerProcess> {
  let command = [process.execPath, BIN, 'serve', '--api-port', '0', '--proxy-port', '0', ...args];
  // `taskset` and `prlimit` exec node in their own process, so the pid is the server's, pinned and
  // limited from its first line.
  if (options.nofile !== undefined) command = ['prlimit', `--nofile=${options.nofile}`, '--', ...command];
  const [file, ...argv] =
    options.pinToCpu === undefined ? command : ['taskset', '-c', String(options.pinToCpu), ...command];
  const child = spawn(file as string, argv, { env: cleanEnv(env) });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`tokenproxy serve did not start in time\n${stderr}`));
    }, 60_000);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`tokenproxy serve exited with ${String(code)}\n${stderr}`));
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const api = /management API\s+(\S+)\/v1/.exec(stderr)?.[1];
      const proxy = /proxy\s+(\S+)/.exec(stderr.slice(stderr.indexOf('management API')))?.[1];
      if (api && proxy && stderr.includes('Ready.')) {
        clearTimeout(timer);
        resolve({
          child,
          apiUrl: api,
          proxyUrl: proxy,
          stdout: () => stdout,
          stderr: () => stderr,
          async stop(graceMs = STOP_GRACE_MS) {
            if (child.exitCode !== null) return child.exitCode;
            child.kill('SIGTERM');
            let timer: NodeJS.Timeout | undefined;
            const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), graceMs)));
            const code = await Promise.race([exited, late]);
            clearTimeout(timer);
            if (code !== 'late') return code;
            child.kill('SIGKILL');
            await exited;
            throw new Error(
              `tokenproxy serve (pid ${String(child.pid)}) did not exit within ${graceMs} ms of SIGTERM; ` +
                `its last output:\n${stderr.slice(-2000)}\n${stdout.slice(-4000)}`,
            );
          },
        });
      }
    });
  });
}

/** A running process's command line (Linux /proc), one argument per element. */
export async function cmdlineOf(pid: number): Promise<string[]> {
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
}

/** The names of a running process's threads (Linux /proc/<pid>/task/<tid>/comm). */
export async function threadNames(pid: number): Promise<string[]> {
  const names: string[] = [];
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    try {
      names.push((await readFile(`/proc/${pid}/task/${tid}/comm`, 'latin1')).trim());
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return names;
}

/**
 * The V8 helper threads of a running process, by name: Node 24 names them `V8Worker`, Node 26
 * `node-V8Worker`; Node 22 leaves them unnamed ("node", like its other threads), so there they cannot
 * be told apart: undefined.
 */
export async function v8HelperThreads(pid: number): Promise<number | undefined> {
  if (Number(process.versions.node.split('.')[0]) < 24) return undefined;
  return (await threadNames(pid)).filter((name) => V8_HELPER_NAMES.has(name)).length;
}

const V8_HELPER_NAMES: ReadonlySet<string> = new Set(['V8Worker', 'node-V8Worker']);

/** The test runner's environment minus anything tokenproxy would read, plus the given values. */
function cleanEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TOKENPROXY_')) env[k] = v;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}
