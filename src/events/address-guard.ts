import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { compileIpMatcher } from '../rules/ip-match.js';

/**
 * Webhook URLs must not reach the server's own network (SSRF): private, loopback, link-local and
 * other non-public addresses are refused unless `allow_private_webhooks` is on. The check runs at
 * creation and again on the address resolved at delivery time, and the delivery connects to exactly
 * that checked address, so a DNS answer that changes in between (DNS rebinding) cannot get through.
 */

const FORBIDDEN_RANGES = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local (cloud metadata services live here)
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, broadcast
  '::/96', // unspecified, loopback, IPv4-compatible
  '::ffff:0:0:0/96', // SIIT IPv4-translated
  '64:ff9b::/96', // NAT64: reaches any IPv4 address, private ones included, through a gateway
  '64:ff9b:1::/48', // local-use NAT64
  '2001::/32', // Teredo (embeds an IPv4 address)
  '2002::/16', // 6to4 (embeds an IPv4 address)
  'fec0::/10', // deprecated site-local
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'ff00::/8', // multicast
];

const forbidden = compileIpMatcher(FORBIDDEN_RANGES);

/** True for an address a webhook may not reach without `allow_private_webhooks`. IPv4-mapped IPv6 counts as IPv4. */
export function isForbiddenAddress(address: string): boolean {
  return forbidden.matches(address);
}

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a host name to all its addresses (injected in tests). */
export type HostResolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export const systemResolver: HostResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, order: 'verbatim' });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export type UrlCheck = { ok: true; url: URL } | { ok: false; message: string };

/** `[::1]` → `::1`: URL keeps the brackets of IPv6 literals. */
export function urlHostname(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

function isLocalName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

const PRIVATE_HINT = 'Set allow_private_webhooks to allow receivers on internal networks.';

/** The rules that need no DNS: scheme, credentials, literal addresses and `localhost`. */
export function checkWebhookUrl(text: string, allowPrivate: boolean): UrlCheck {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, message: 'it is not an absolute URL (expected https://…)' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { ok: false, message: `the scheme must be https (got ${url.protocol.slice(0, -1)})` };
  }
  if (url.protocol === 'http:' && !allowPrivate) {
    return {
      ok: false,
      message: `it must use https. ${PRIVATE_HINT.replace('receivers on', 'http:// and receivers on')}`,
    };
  }
  if (url.username !== '' || url.password !== '') {
    return { ok: false, message: 'it must not contain a user name or password' };
  }
  if (url.hash !== '') return { ok: false, message: 'it must not contain a #fragment' };
  if (!allowPrivate) {
    const host = urlHostname(url);
    if (isLocalName(host) || (isIP(host) !== 0 && isForbiddenAddress(host))) {
      return {
        ok: false,
        message: `it points to a private, loopback or link-local address. ${PRIVATE_HINT}`,
      };
    }
  }
  return { ok: true, url };
}

/** The delivery address is one webhooks may not reach (private, loopback, link-local, no address). */
export class AddressRefusedError extends Error {
  readonly code = 'address_refused';
  constructor(message: string) {
    super(message);
    this.name = 'AddressRefusedError';
  }
}

/**
 * The address to connect to for `url`: a literal address as is, a name resolved now. Every address
 * the name resolves to must be allowed (a name with one private answer is refused), so that which
 * answer is used cannot matter. Throws AddressRefusedError, or the resolver's error.
 */
export async function resolveDeliveryAddress(
  url: URL,
  options: { readonly allowPrivate: boolean; readonly resolver: HostResolver },
): Promise<ResolvedAddress> {
  const host = urlHostname(url);
  const family = isIP(host);
  const answers: readonly ResolvedAddress[] =
    family === 0 ? await options.resolver(host) : [{ address: host, family: family === 6 ? 6 : 4 }];
  const first = answers[0];
  if (first === undefined) throw new AddressRefusedError('the host name has no address');
  if (!options.allowPrivate) {
    if (isLocalName(host)) throw new AddressRefusedError('the host is a loopback name');
    const bad = answers.find((a) => isForbiddenAddress(a.address));
    if (bad !== undefined) {
      // The address itself is not echoed: it would tell a tenant how internal names resolve.
      throw new AddressRefusedError('the host resolves to a private, loopback or link-local address');
    }
  }
  return first;
}

/**
 * Creation-time check of a host name: refused when it already resolves to a forbidden address. A
 * name that does not resolve (yet) is accepted; delivery checks it again.
 */
export async function checkWebhookHost(
  url: URL,
  options: { readonly allowPrivate: boolean; readonly resolver: HostResolver; readonly timeoutMs: number },
): Promise<UrlCheck> {
  if (options.allowPrivate || isIP(urlHostname(url)) !== 0) return { ok: true, url };
  let answers: readonly ResolvedAddress[];
  try {
    answers = await withTimeout(options.resolver(urlHostname(url)), options.timeoutMs);
  } catch {
    return { ok: true, url };
  }
  const bad = answers.find((a) => isForbiddenAddress(a.address));
  if (bad === undefined) return { ok: true, url };
  return {
    ok: false,
    message: `its host resolves to a private, loopback or link-local address. ${PRIVATE_HINT}`,
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timeout')), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
