/* eslint-disable @typescript-eslint/no-explicit-any --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { PLANS } from '../../src/accounts/plans.js';
import { buildApiApp } from '../../src/api/app.js';
import type { ApiServer } from '../../src/api/context.js';
import { createAccount } from '../../src/accounts/create-account.js';
import type { Config } from '../../src/config/load.js';
import type { HostResolver } from '../../src/events/address-guard.js';
import { startEvents, type RunningEvents } from '../../src/events/start-events.js';
import { createLogger } from '../../src/observability/logger.js';
import { ProviderRegistry } from '../../src/providers/providers.js';
import { createLocalVault } from '../../src/vault/local-kek.js';
import type { DatabaseFixture, OpenedDatabase } from '../support/databases.js';

/** Real receivers on loopback, and the API plus the events subsystem wired as `serve` wires them. */

export interface ReceivedRequest {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
}

/**
 * What the receiver does with the next request: answer with a status, drop the connection, or hang
 * (never answer; the connection stays open until the sender gives up or the receiver closes).
 */
export type Behaviour = number | 'drop' | 'hang';

export interface Receiver {
  readonly url: string;
  readonly port: number;
  readonly requests: ReceivedRequest[];
  /** Requests left hanging that are still open. */
  readonly hanging: number;
  /** Hanging requests the sender gave up on (closed its end). */
  readonly abandoned: number;
  /** Drops the hanging connections (the senders see a failed attempt). */
  releaseHanging(): void;
  /** Behaviours for the next requests, in order; afterwards `otherwise` (default 200). */
  script(behaviours: Behaviour[], otherwise?: Behaviour): void;
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let queue: Behaviour[] = [];
  let otherwise: Behaviour = 200;
  let waiters: (() => void)[] = [];
  const hung = new Set<Socket>();
  let abandoned = 0;
  let releasing = false;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      for (const w of waiters) w();
      waiters = [];
      const behaviour = queue.shift() ?? otherwise;
      if (behaviour === 'drop') {
        req.socket.destroy();
        return;
      }
      if (behaviour === 'hang') {
        hung.add(req.socket);
        res.on('close', () => {
          hung.delete(req.socket);
          if (!releasing) abandoned++;
        });
        return;
      }
      res.writeHead(behaviour, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    requests,
    get hanging() {
      return hung.size;
    },
    get abandoned() {
      return abandoned;
    },
    releaseHanging() {
      releasing = true;
      for (const socket of hung) socket.destroy();
      releasing = false;
    },
    script(behaviours, other = 200) {
      queue = [...behaviours];
      otherwise = other;
    },
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`receiver got ${requests.length} requests, expected ${count}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return requests.slice(0, count);
    },
    close: () =>
      new Promise((resolve) => {
        releasing = true;
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface ReceivedMail {
  readonly from: string;
  readonly to: string[];
  readonly raw: string;
  readonly at: number;
}

export interface SmtpSink {
  readonly url: string;
  readonly messages: ReceivedMail[];
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

/** A real SMTP server (no TLS, no auth) that keeps every message it accepts. */
export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const from = session.envelope.mailFrom;
        messages.push({
          from: from === false ? '' : from.address,
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    async waitFor(count, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline)
          throw new Error(`SMTP server got ${messages.length} messages, expected ${count}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return messages.slice(0, count);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Decodes the quoted-printable parts of a raw message enough for substring checks. */
export function decodeQuotedPrintable(raw: string): string {
  const joined = raw.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const hex = joined[i] === '=' ? /^[0-9A-F]{2}$/.exec(joined.slice(i + 1, i + 3)) : null;
    if (hex !== null) {
      bytes.push(parseInt(hex[0], 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(joined[i] ?? '', 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

export type EventsConfig = Parameters<typeof startEvents>[0]['config'];

export function eventsConfig(overrides: Partial<EventsConfig> = {}): EventsConfig {
  return {
    smtpUrl: undefined,
    smtpFrom: 'tokenproxy@localhost',
    allowPrivateWebhooks: true,
    webhookRetrySchedule: [100, 200, 400],
    webhookDisableAfterMs: 5 * 24 * 3600 * 1000,
    expirySweepIntervalMs: 60_000,
    ...overrides,
  } satisfies Partial<Config>;
}

export const PROXY_URL = 'https://proxy.test:8444';
export const DASHBOARD = 'https://api.test:8443';

export interface EventsHarness {
  readonly app: ApiServer;
  readonly db: OpenedDatabase;
  readonly events: RunningEvents;
  readonly logs: string[];
  readonly apiKey: string;
  readonly accountId: string;
  request(
    method: string,
    url: string,
    body?: unknown,
    apiKey?: string,
  ): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function startEventsHarness(
  fixture: DatabaseFixture,
  options: {
    config?: Partial<EventsConfig>;
    resolver?: HostResolver;
    apiResolver?: HostResolver;
    deliveryTimeoutMs?: number;
  } = {},
): Promise<EventsHarness> {
  const db = await fixture.create();
  const vault = createLocalVault(randomBytes(32));
  const logs: string[] = [];
  const logger = createLogger('debug', { write: (line: string) => void logs.push(line) });
  const config = eventsConfig(options.config);
  const events = startEvents({
    store: db.store,
    vault,
    config,
    logger,
    links: { publicProxyUrl: () => PROXY_URL, dashboardUrl: () => `${DASHBOARD}/` },
    resolver: options.resolver,
    deliveryTimeoutMs: options.deliveryTimeoutMs ?? 2000,
    pollIntervalMs: 100,
  });
  const app = await buildApiApp(
    {
      store: db.store,
      vault,
      providers: new ProviderRegistry([]),
      publicProxyUrl: PROXY_URL,
      plans: PLANS,
      now: () => new Date(),
      onEventsCommitted: () => events.nudge(),
      allowPrivateWebhooks: config.allowPrivateWebhooks,
      resolveWebhookHost: options.apiResolver,
    },
    { logger, version: 'test' },
  );
  await app.ready();
  const own = await createAccount(db.store, 'events', 'unlimited', new Date());
  return {
    app,
    db,
    events,
    logs,
    apiKey: own.apiKey,
    accountId: own.account.id,
    async request(method, url, body, apiKey = own.apiKey) {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
      let parsed: unknown;
      try {
        parsed = JSON.parse(res.body);
      } catch {
        parsed = undefined;
      }
      return { status: res.statusCode, body: parsed };
    },
    async close() {
      await app.close();
      await events.close();
      await db.cleanup();
    },
  };
}
