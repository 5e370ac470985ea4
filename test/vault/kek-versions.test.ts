import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KekError } from '../../src/vault/kek-error.js';
import { localVersions } from '../../src/vault/kek-versions.js';
import { rejection } from '../support/rejection.js';

describe('local KEK versions', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-kek-versions-'));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('promoting a version neither key file holds is a bad master key, naming the file and the fix', async () => {
    const current = path.join(dataDir, 'master.key');
    await writeFile(current, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    const versions = localVersions(dataDir);
    await versions.makeNext();
    const err = await rejection(versions.promote('00112233aabbccdd', []));
    expect(err).toBeInstanceOf(KekError);
    expect(err).toMatchObject({ setting: `master.key (${current})`, code: 'invalid_config' });
    expect(err.message).toContain('KEK 00112233aabbccdd');
    expect(err.message).toContain('run kek rotate again');
  });
});
