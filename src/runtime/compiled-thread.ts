import { existsSync } from 'node:fs';

/** An install whose dist/ lacks a thread's module (a clone or pull not built): the fix is a build. */
export class MissingBuildError extends Error {
  readonly code = 'build_missing';
  constructor(
    readonly file: string,
    owner: string,
  ) {
    super(`${owner}: dist/${file} is missing; run \`npm run build\``);
    this.name = 'MissingBuildError';
  }
}

/**
 * The compiled module a worker thread runs: beside the module that starts it (the built server), or
 * in dist/ when that module runs from its TypeScript source (tests). `from` is the starter's
 * `import.meta.url`, in a folder directly under src/; `file` is the thread's path under src/ and
 * dist/, such as `retention/retention-thread.js`; `owner` names it in the error of a broken install.
 */
export function compiledThread(from: string, file: string, owner: string): URL {
  const beside = new URL(`./${file.slice(file.lastIndexOf('/') + 1)}`, from);
  if (existsSync(beside)) return beside;
  const built = new URL(`../../dist/${file}`, from);
  if (existsSync(built)) return built;
  throw new MissingBuildError(file, owner);
}
