import type { RequestLogRecord, RequestLogSink } from '../../src/requestlog/record.js';
import type { Vault } from '../../src/vault/vault.js';

/** What the proxy harness collects from its vault and its request log, for the tests to look at. */

export interface RecordingVault {
  readonly vault: Vault;
  /** Every Buffer the vault's decrypt returned, in order. */
  readonly decrypted: Buffer[];
  /** Holds every decrypted key back from the caller (recorded already) until the returned release. */
  readonly holdDecrypts: () => () => void;
}

/** Wraps `realVault` so that every Buffer its decrypt returns is recorded, and can be held back. */
export function recordingVault(realVault: Vault): RecordingVault {
  const decrypted: Buffer[] = [];
  let held: Promise<void> | null = null;
  const vault: Vault = {
    kekId: realVault.kekId,
    encrypt: (plaintext, binding) => realVault.encrypt(plaintext, binding),
    mac: (purpose, data) => realVault.mac(purpose, data),
    healthy: () => realVault.healthy(),
    close: () => realVault.close(),
    async decrypt(envelope, binding) {
      const out = await realVault.decrypt(envelope, binding);
      decrypted.push(out);
      if (held !== null) await held;
      return out;
    },
  };
  return {
    vault,
    decrypted,
    holdDecrypts() {
      let release = (): void => undefined;
      held = new Promise((resolve) => (release = resolve));
      return () => {
        held = null;
        release();
      };
    },
  };
}

export interface RequestLogRecorder {
  /** The request log to hand the proxy. */
  readonly sink: RequestLogSink;
  readonly records: RequestLogRecord[];
  /** Waits for the first record matching `predicate`. */
  readonly waitForRecord: (predicate: (r: RequestLogRecord) => boolean) => Promise<RequestLogRecord>;
  /** Waits until `count` records were written. */
  readonly waitForRecords: (count: number) => Promise<RequestLogRecord[]>;
}

/** A request log that keeps every record in memory and wakes whoever waits for one. */
export function requestLogRecorder(): RequestLogRecorder {
  const records: RequestLogRecord[] = [];
  const waiters = new Set<() => void>();
  const sink: RequestLogSink = {
    write(record) {
      records.push(record);
      for (const wake of [...waiters]) wake();
    },
    flush: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };

  function waitForRecord(predicate: (r: RequestLogRecord) => boolean): Promise<RequestLogRecord> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const found = records.find(predicate);
        if (found === undefined) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error('waited for a matching request-log record'));
      }, 5000);
      waiters.add(check);
      check();
    });
  }

  function waitForRecords(count: number): Promise<RequestLogRecord[]> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (records.length < count) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(records.slice());
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`waited for ${count} request-log records, got ${records.length}`));
      }, 5000);
      waiters.add(check);
      check();
    });
  }

  return { sink, records, waitForRecord, waitForRecords };
}
