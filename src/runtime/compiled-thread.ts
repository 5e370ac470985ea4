import { existsSync } from 'node:fs';

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
  throw new Error(`${owner}: dist/${file} is missing; run \`npm run build\``);
}
