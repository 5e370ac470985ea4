import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

/**
 * Every process the benchmark starts goes through here, so that each one is stopped by its pid —
 * on success, on failure and on Ctrl-C alike.
 */
export interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  readonly exited: Promise<number | string>;
  stdout: string;
  stderr: string;
}

export class Children {
  readonly #live = new Set<Child>();

  start(name: string, cmd: string, args: readonly string[], options: SpawnOptions = {}): Child {
    const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    if (proc.pid === undefined) {
      // The spawn error (ENOENT, EACCES) is emitted a tick later: without a listener it would
      // crash the driver instead of letting this error say what failed.
      proc.once('error', () => undefined);
      throw new Error(`could not start ${name} (${cmd}: not found or not executable)`);
    }
    let resolveExit: (v: number | string) => void = () => undefined;
    const exited = new Promise<number | string>((resolve) => (resolveExit = resolve));
    const child: Child = { name, proc, pid: proc.pid, exited, stdout: '', stderr: '' };
    proc.stdout?.setEncoding('utf8').on('data', (s: string) => {
      child.stdout = keepTail(child.stdout + s);
    });
    proc.stderr?.setEncoding('utf8').on('data', (s: string) => {
      child.stderr = keepTail(child.stderr + s);
    });
    proc.once('error', () => resolveExit('spawn-error'));
    proc.once('exit', (code, signal) => {
      this.#live.delete(child);
      resolveExit(code ?? signal ?? 'unknown');
    });
    this.#live.add(child);
    return child;
  }

  /** Runs a command to completion (killed after `timeoutMs`) and returns its output. */
  async run(
    name: string,
    cmd: string,
    args: readonly string[],
    timeoutMs: number,
    options: SpawnOptions = {},
  ): Promise<{ stdout: string; stderr: string; code: number | string }> {
    const child = this.start(name, cmd, args, options);
    const timer = setTimeout(() => void this.stop(child, 1000), timeoutMs);
    const code = await child.exited;
    clearTimeout(timer);
    return { stdout: child.stdout, stderr: child.stderr, code };
  }

  /** Waits until `pattern` shows up in the child's stdout or stderr. */
  async waitFor(child: Child, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = pattern.exec(child.stdout) ?? pattern.exec(child.stderr);
      if (match !== null) return match;
      if (!this.#live.has(child)) {
        throw new Error(`${child.name} exited before it was ready:\n${child.stderr.slice(-3000)}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`${child.name} not ready after ${timeoutMs} ms:\n${child.stderr.slice(-3000)}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Runs `fn` with the processes `pids` stopped (SIGSTOP), resuming them after, even when it throws:
   * a system measured on a CPU it shares with idle systems then has it to itself, whatever they would
   * have done meanwhile (an idle proxy's memory reduction, V8's follow-up collections).
   */
  async pausedWhile<T>(pids: readonly number[], fn: () => Promise<T>): Promise<T> {
    const paused: number[] = [];
    try {
      for (const pid of pids) {
        process.kill(pid, 'SIGSTOP');
        paused.push(pid);
      }
      return await fn();
    } finally {
      for (const pid of paused) signal(pid, 'SIGCONT');
    }
  }

  /** SIGTERM by pid, SIGKILL after `graceMs`. */
  async stop(child: Child, graceMs = 5000): Promise<void> {
    if (!this.#live.has(child)) return;
    try {
      process.kill(child.pid, 'SIGTERM');
    } catch {
      return;
    }
    // A process paused by pausedWhile would hold the SIGTERM until the SIGKILL: let it shut down.
    signal(child.pid, 'SIGCONT');
    const timer = setTimeout(() => {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, graceMs);
    await child.exited;
    clearTimeout(timer);
  }

  async stopAll(graceMs = 5000): Promise<void> {
    await Promise.all([...this.#live].map((c) => this.stop(c, graceMs)));
  }

  /** Synchronous last resort (process 'exit'): SIGKILL whatever is still running. */
  killAllNow(): void {
    for (const child of this.#live) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

function keepTail(text: string): string {
  return text.length > 200_000 ? text.slice(-100_000) : text;
}

/** `process.kill` for a process that may be gone already. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}
