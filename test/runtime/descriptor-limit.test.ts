import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseOpenFilesLimit, readDescriptorLimit } from '../../src/runtime/descriptor-limit.js';

const header = 'Limit                     Soft Limit           Hard Limit           Units     \n';
const row = (soft: string, hard: string) =>
  `${header}Max processes             96365                96365                processes \n` +
  `Max open files            ${soft.padEnd(21)}${hard.padEnd(21)}files     \n` +
  'Max locked memory         8388608              8388608              bytes     \n';

describe('the descriptor limit from /proc/<pid>/limits', () => {
  it.each([
    [row('1024', '524288'), 1024],
    [row('65536', '65536'), 65_536],
    [row('256', '256'), 256],
    [row('unlimited', 'unlimited'), undefined],
    [row('0', '0'), undefined],
    [header, undefined],
    ['', undefined],
  ])('%#: %o', (text, limit) => {
    expect(parseOpenFilesLimit(text)).toBe(limit);
  });

  it('reads this process’s own where there is one, and nothing where the file is missing', () => {
    if (process.platform === 'linux') expect(readDescriptorLimit()).toBeGreaterThan(0);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tokenproxy-limits-'));
    expect(readDescriptorLimit(path.join(dir, 'missing'))).toBeUndefined();
    writeFileSync(path.join(dir, 'limits'), row('4096', '8192'));
    expect(readDescriptorLimit(path.join(dir, 'limits'))).toBe(4096);
  });
});
