import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { startSharedClock } from '../../src/cluster/shared-clock.js';
import { MAX_SAMPLE_RTT_MS } from '../../src/rules/clock-sync.js';
import { databases, type OpenedDatabase } from '../support/databases.js';

const T = 1_800_000_000_000;

/**
 * A database whose clock reads `serverAt(mono)` and whose answers take `rtt()` ms of the caller's
 * monotonic clock. The machine's own wall clock reads T + mono, plus `wallStep` (the test steps it).
 */
function fakeDatabase(serverAt: (mono: number) => number, rtt: () => number = () => 2) {
  const state = { mono: 1_000, wallStep: 0, reads: 0 };
  return {
    state,
    monotonic: () => state.mono,
    wall: () => T + state.mono + state.wallStep,
    store: {
      readClock: () => {
        state.reads++;
        const half = rtt() / 2;
        state.mono += half;
        const at = serverAt(state.mono);
        state.mono += half;
        return Promise.resolve(at);
      },
    },
  };
}

function logLines() {
  const lines: string[] = [];
  return {
    lines,
    logger: {
      warn: (_o: object, msg: string) => void lines.push(`warn ${msg}`),
      info: (_o: object, msg: string) => void lines.push(`info ${msg}`),
    },
  };
}

const gauge = async (registry: Registry): Promise<number | undefined> =>
  (await registry.getSingleMetric('tokenproxy_clock_offset_seconds')?.get())?.values[0]?.value;

describe('the shared clock', () => {
  it("is the database's clock, run forward on the monotonic clock, whatever the wall clock does", async () => {
    // The database is 90 s behind this machine's wall clock.
    const db = fakeDatabase((mono) => T - 90_000 + mono);
    const { lines, logger } = logLines();
    const registry = new Registry();
    const clock = await startSharedClock({ ...db, logger, registry, refreshMs: 0 });
    expect(db.state.reads).toBe(3);
    expect(Math.abs(clock.nowMs() - (T - 90_000 + db.state.mono))).toBeLessThanOrEqual(1);
    db.state.mono += 5_000;
    db.state.wallStep -= 3_600_000; // this machine's clock stepped back an hour: nothing changes
    expect(Math.abs(clock.nowMs() - (T - 90_000 + db.state.mono))).toBeLessThanOrEqual(1);
    expect(Number.isInteger(clock.nowMs())).toBe(true);
    expect(clock.now().getTime()).toBe(clock.nowMs());
    expect(Math.round(clock.localOffsetMs() / 1000)).toBe(90);
    expect(Math.round((await gauge(registry)) ?? 0)).toBe(90);
    expect(lines).toEqual([
      expect.stringMatching(/^warn this machine's clock is 90\.0 s ahead of the database's/),
    ]);
    clock.close();
  });

  it('keeps the reading with the shortest round trip, and takes a slow one at start rather than none', async () => {
    const trips = [40, 4, 30];
    const db = fakeDatabase(
      (mono) => T + mono,
      () => trips.shift() ?? 4,
    );
    const clock = await startSharedClock({ ...db, refreshMs: 0 });
    // The database's instant is taken as the middle of the 4 ms trip: exact here.
    expect(clock.nowMs()).toBe(Math.floor(T + db.state.mono));
    clock.close();

    const slow = fakeDatabase(
      (mono) => T + mono,
      () => MAX_SAMPLE_RTT_MS * 3,
    );
    const started = await startSharedClock({ ...slow, refreshMs: 0 });
    expect(Math.abs(started.nowMs() - (T + slow.state.mono))).toBeLessThanOrEqual(1);
    started.close();
  });

  it('follows the database clock at each refresh, ignores slow readings, and says when it moved', async () => {
    let serverStep = 0;
    let trip = 2;
    const db = fakeDatabase(
      (mono) => T + serverStep + mono,
      () => trip,
    );
    const { lines, logger } = logLines();
    const clock = await startSharedClock({ ...db, logger, refreshMs: 20 });
    const reads = db.state.reads;
    const refreshed = async (): Promise<void> => {
      const before = db.state.reads;
      while (db.state.reads < before + 3) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 5));
    };
    expect(reads).toBe(3);
    // The database's clock steps 10 s back, but its answers are slow: not taken.
    serverStep = -10_000;
    trip = MAX_SAMPLE_RTT_MS + 50;
    await refreshed();
    expect(Math.abs(clock.nowMs() - (T + db.state.mono))).toBeLessThanOrEqual(1);
    // Fast again: taken, and logged.
    trip = 2;
    await refreshed();
    expect(Math.abs(clock.nowMs() - (T - 10_000 + db.state.mono))).toBeLessThanOrEqual(1);
    expect(lines).toContainEqual(expect.stringMatching(/^warn the database's clock moved 10\.0 s back/));
    clock.close();
  });

  it('follows a database that is always far away, and takes a slow reading once its anchor is old', async () => {
    let serverStep = 0;
    let trip = 150; // another region: every reading is over the 100 ms bound
    const db = fakeDatabase(
      (mono) => T + serverStep + mono,
      () => trip,
    );
    const clock = await startSharedClock({ ...db, refreshMs: 20 });
    const refreshed = async (): Promise<void> => {
      const before = db.state.reads;
      while (db.state.reads < before + 3) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 5));
    };
    serverStep = 5_000;
    await refreshed();
    // Half again the shortest round trip seen (225 ms) is taken: the step is followed.
    expect(Math.abs(clock.nowMs() - (T + 5_000 + db.state.mono))).toBeLessThanOrEqual(75);
    // A loaded moment (400 ms) is not taken while the anchor is fresh...
    trip = 400;
    serverStep = 9_000;
    await refreshed();
    expect(Math.abs(clock.nowMs() - (T + 5_000 + db.state.mono))).toBeLessThanOrEqual(200);
    // ...but is, once no reading was taken for five minutes.
    db.state.mono += 5 * 60_000;
    await refreshed();
    expect(Math.abs(clock.nowMs() - (T + 9_000 + db.state.mono))).toBeLessThanOrEqual(200);
    clock.close();
  });

  it("starts on this machine's clock when the database's cannot be read, and takes it at the next reading", async () => {
    const db = fakeDatabase((mono) => T - 60_000 + mono);
    let fail = true;
    const store = {
      readClock: () => (fail ? Promise.reject(new Error('connection terminated')) : db.store.readClock()),
    };
    const { lines, logger } = logLines();
    const clock = await startSharedClock({ ...db, store, logger, refreshMs: 20 });
    expect(lines).toEqual([expect.stringMatching(/^warn could not read the database's clock at start/)]);
    expect(Math.abs(clock.nowMs() - (T + db.state.mono))).toBeLessThanOrEqual(1);
    fail = false;
    const before = db.state.reads;
    while (db.state.reads < before + 3) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 5));
    expect(Math.abs(clock.nowMs() - (T - 60_000 + db.state.mono))).toBeLessThanOrEqual(1);
    clock.close();
  });

  it('warns when this machine drifts away from the database, and says when it agrees again', async () => {
    // 300 ms apart: close enough to say nothing.
    const db = fakeDatabase((mono) => T + mono - 300);
    const { lines, logger } = logLines();
    const clock = await startSharedClock({ ...db, logger, refreshMs: 10 });
    expect(lines).toEqual([]);
    db.state.wallStep += 5_000;
    await new Promise((r) => setTimeout(r, 60));
    db.state.wallStep -= 5_000;
    await new Promise((r) => setTimeout(r, 60));
    clock.close();
    expect(lines[0]).toMatch(/^warn this machine's clock is 5\.3 s ahead/);
    expect(lines[1]).toMatch(/^info this machine's clock agrees with the database's again/);
    expect(lines).toHaveLength(2);
  });
});

describe.each(databases)('the clock of a store on $name', (fixture) => {
  let db: OpenedDatabase | undefined;
  afterAll(() => db?.cleanup());

  it.skipIf(!fixture.available)("is the database server's, or this machine's on SQLite", async () => {
    db = await fixture.create();
    const read = await db.store.readClock();
    if (fixture.name === 'sqlite') {
      expect(read).toBeUndefined();
    } else {
      // The test's PostgreSQL runs on this machine: its clock is this one's.
      expect(Math.abs((read ?? 0) - Date.now())).toBeLessThan(1_000);
      // clock_timestamp(), not the transaction's fixed now(): two reads differ.
      const later = await new Promise<number | undefined>((r) =>
        setTimeout(() => void db?.store.readClock().then(r), 20),
      );
      expect((later ?? 0) - (read ?? 0)).toBeGreaterThanOrEqual(15);
    }
    const clock = await startSharedClock({ store: db.store, refreshMs: 0 });
    expect(Math.abs(clock.nowMs() - Date.now())).toBeLessThan(1_000);
    clock.close();
  });
});
