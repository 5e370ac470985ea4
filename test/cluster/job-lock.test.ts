import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobLock } from '../../src/cluster/job-lock.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { databases, type OpenedDatabase } from '../support/databases.js';

const HOLD_JOB = fileURLToPath(new URL('./fixtures/hold-job.js', import.meta.url));
/** Long enough that the holder's last renewal is still running when the test looks right after the kill. */
const LEASE_MS = 10_000;

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`job lock (${fixture.name})`, () => {
    let db: OpenedDatabase;
    /** A second connection, as another process would have. */
    let other: Store;
    const children: ChildProcess[] = [];

    beforeAll(async () => {
      db = await fixture.create();
      other = await openStore({ database: db.database, dataDir: db.dataDir });
    });
    afterAll(async () => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      await other?.close();
      await db?.cleanup();
    });

    it('two holders at once: exactly one runs the job, the other is told it did not', async () => {
      const a = createJobLock({ store: db.store });
      const b = createJobLock({ store: other });
      let release = (): void => undefined;
      const gate = new Promise<void>((r) => (release = r));
      let runs = 0;
      const job = async () => {
        runs++;
        await gate;
        return 'swept';
      };
      const first = a.runExclusive('sweep', job);
      const second = b.runExclusive('sweep', job);
      // The same process twice is refused as well: one run per name.
      const third = a.runExclusive('sweep', job);
      await sleep(200);
      release();
      const results = await Promise.all([first, second, third]);
      expect(runs).toBe(1);
      expect(results.filter((r) => r.ran)).toEqual([{ ran: true, value: 'swept' }]);
      // Released when the job ended: the next run may happen in the other process.
      expect(await b.runExclusive('sweep', () => Promise.resolve(1))).toEqual({ ran: true, value: 1 });
      // Names are independent.
      expect((await a.runExclusive('retention', () => Promise.resolve(2))).ran).toBe(true);
    });

    it(
      'a long job renews its lease, so nobody takes it over while it runs',
      { timeout: 60_000 },
      async () => {
        const a = createJobLock({ store: db.store, leaseMs: 1500 });
        const b = createJobLock({ store: other, leaseMs: 1500 });
        let release = (): void => undefined;
        const running = a.runExclusive('long', () => new Promise<void>((r) => (release = r)));
        // Well past the lease length without renewal.
        for (let i = 0; i < 4; i++) {
          await sleep(1000);
          expect((await b.runExclusive('long', () => Promise.resolve())).ran).toBe(false);
        }
        release();
        expect((await running).ran).toBe(true);
        expect((await b.runExclusive('long', () => Promise.resolve())).ran).toBe(true);
      },
    );

    it(
      'a holder killed with -9 keeps the job until its lease runs out, then another takes over',
      { timeout: 120_000 },
      async () => {
        const child = spawn(
          process.execPath,
          [HOLD_JOB, db.dataDir, db.database ?? '-', 'crashy', String(LEASE_MS)],
          {
            stdio: ['ignore', 'pipe', 'inherit'],
          },
        );
        children.push(child);
        await new Promise<void>((resolve, reject) => {
          child.stdout?.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
          child.on('exit', (code) => reject(new Error(`the holder exited with ${String(code)}`)));
        });
        const b = createJobLock({ store: other, leaseMs: LEASE_MS });
        expect((await b.runExclusive('crashy', () => Promise.resolve())).ran).toBe(false);
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
        // Renewed at most a third of a lease ago: still held by the dead process right after the kill.
        expect((await b.runExclusive('crashy', () => Promise.resolve())).ran).toBe(false);
        let takenAt = 0;
        for (let i = 0; i < 240 && takenAt === 0; i++) {
          if ((await b.runExclusive('crashy', () => Promise.resolve())).ran) takenAt = Date.now();
          else await sleep(250);
        }
        expect(takenAt).toBeGreaterThan(0);
      },
    );
  });
}
