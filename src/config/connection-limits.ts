/**
 * How many connections each listener and each provider origin may hold, from the process's
 * descriptor limit (docs/operations.md, "Connections and file descriptors"). Every connection is a
 * descriptor, and so is everything else the process has open: once the table is full, accepting,
 * connecting upstream, the store and the log worker all fail at once. The caps keep the proxy's
 * connections within a share of the table, so a flood of them is refused at the door while the
 * management API, the store and the workers keep the rest.
 */

/**
 * Descriptors kept for the process's own files: measured 33 open on an idle server on SQLite;
 * PostgreSQL adds up to 10 connections per pool (the server's, the log worker's, the retention
 * worker's), Redis two, and deliveries (webhooks, SMTP) a few.
 */
export const PROCESS_RESERVE = 128;
/** The management listener's share: a dashboard, scrapers and automation need few connections. */
export const API_SHARE = 1 / 16;
export const API_MIN = 16;
export const API_MAX = 1024;
/** Below this the server could not do much anyway; the caps never go lower. */
export const MIN_CONNECTIONS = 16;

export interface ConnectionLimits {
  /** The process's descriptor limit; undefined where it cannot be read (then `auto` caps nothing). */
  readonly descriptorLimit: number | undefined;
  /** Open connections the proxy listener accepts; beyond, a new one is closed at accept. */
  readonly proxy: number | undefined;
  /** Connections per provider origin; requests beyond wait for one to be free. */
  readonly upstream: number | undefined;
  /** Open connections the management listener accepts. */
  readonly api: number | undefined;
  /**
   * The caps (settings given explicitly) add up to more than the descriptor limit leaves after the
   * process's own share: a flood can exhaust descriptors before it reaches them.
   */
  readonly overcommitted: boolean;
}

export interface ConnectionSettings {
  readonly proxy: number | 'auto';
  readonly upstream: number | 'auto';
}

/**
 * `auto` splits what the reserve and the API leave in two: one half for client connections, one for
 * upstream ones, since each HTTP/1.1 request in flight holds one of each (a long completion for
 * minutes). A per-origin cap below the client cap would queue streams behind streams.
 */
export function connectionLimits(
  settings: ConnectionSettings,
  descriptorLimit: number | undefined,
): ConnectionLimits {
  if (descriptorLimit === undefined) {
    return {
      descriptorLimit,
      proxy: settings.proxy === 'auto' ? undefined : settings.proxy,
      upstream: settings.upstream === 'auto' ? undefined : settings.upstream,
      api: undefined,
      overcommitted: false,
    };
  }
  const api = Math.min(API_MAX, Math.max(API_MIN, Math.floor(descriptorLimit * API_SHARE)));
  const left = descriptorLimit - PROCESS_RESERVE - api;
  const half = Math.max(MIN_CONNECTIONS, Math.floor(left / 2));
  const proxy = settings.proxy === 'auto' ? half : settings.proxy;
  const upstream = settings.upstream === 'auto' ? half : settings.upstream;
  return { descriptorLimit, proxy, upstream, api, overcommitted: proxy + upstream > Math.max(left, 0) };
}
