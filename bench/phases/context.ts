import type { Store } from '../../src/store/store.js';
import type { Bench } from '../load/bench.js';
import type { Reference, Scenario, Tokenproxy } from '../load/types.js';
import type { Settings } from '../settings.js';

/** What every phase works with: the settings, the driver, and what the set-up started. */
export interface PhaseContext {
  readonly s: Settings;
  readonly b: Bench;
  readonly tmp: string;
  /** The run's start time, file-name safe: names its results and scratch databases. */
  readonly stamp: string;
  readonly tls: { readonly ca: string; readonly cert: string; readonly key: string };
  readonly direct: Scenario;
  readonly proxy: Scenario;
  /** `proxy` over HTTP/2. */
  readonly proxyH2: Scenario;
  readonly forwarder: Scenario;
  readonly relay: Scenario;
  readonly forwarderRef: Reference;
  readonly relayRef: Reference;
  readonly tp: Tokenproxy;
  readonly token: string;
  readonly keyId: string;
  readonly rssIdleStart: number;
  /** The proxy's SQLite store, opened once by the first phase that writes to it directly. */
  readonly openedStore: () => Promise<Store>;
}
