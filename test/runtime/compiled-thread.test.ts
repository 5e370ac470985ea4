import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledThread, MissingBuildError } from '../../src/runtime/compiled-thread.js';

/**
 * Where a worker thread's compiled file is found: beside the built starter, else in dist/ (the
 * starter running from src/ under the test runner), else an error that says how to fix the install.
 * A fake project tree, so that the real dist/ cannot answer for a missing file.
 */
describe('compiledThread', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'tp-compiled-thread-'));
    await mkdir(path.join(root, 'dist', 'jobs'), { recursive: true });
    await mkdir(path.join(root, 'src', 'jobs'), { recursive: true });
    await mkdir(path.join(root, 'src', 'other'), { recursive: true });
    await writeFile(path.join(root, 'dist', 'jobs', 'starter.js'), '');
    await writeFile(path.join(root, 'dist', 'jobs', 'job-thread.js'), '');
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const url = (...parts: string[]) => pathToFileURL(path.join(root, ...parts)).href;

  it.each([
    { name: 'the built starter: the file beside it', from: ['dist', 'jobs', 'starter.js'] },
    { name: 'a starter run from src/: the file in dist/', from: ['src', 'jobs', 'starter.ts'] },
  ])('$name', ({ from }) => {
    const found = compiledThread(url(...from), 'jobs/job-thread.js', 'the job');
    expect(fileURLToPath(found)).toBe(path.join(root, 'dist', 'jobs', 'job-thread.js'));
  });

  it('names the missing file, its owner and the fix when neither place has it', () => {
    expect(() =>
      compiledThread(url('src', 'other', 'starter.ts'), 'other/other-thread.js', 'the other job'),
    ).toThrow('the other job: dist/other/other-thread.js is missing; run `npm run build`');
    expect(() => compiledThread(url('src', 'other', 'starter.ts'), 'other/other-thread.js', 'x')).toThrow(
      expect.objectContaining({ code: 'build_missing', file: 'other/other-thread.js' }) as MissingBuildError,
    );
  });

  it('finds every thread the server starts in the real build', () => {
    const src = (file: string) =>
      pathToFileURL(fileURLToPath(new URL(`../../src/${file}`, import.meta.url))).href;
    for (const [starter, thread] of [
      ['requestlog/log-worker.ts', 'requestlog/log-thread.js'],
      ['retention/retention-worker.ts', 'retention/retention-thread.js'],
      ['vault/pkcs11-kek.ts', 'vault/pkcs11-thread.js'],
    ] as const) {
      expect(fileURLToPath(compiledThread(src(starter), thread, starter))).toBe(
        fileURLToPath(new URL(`../../dist/${thread}`, import.meta.url)),
      );
    }
  });
});
