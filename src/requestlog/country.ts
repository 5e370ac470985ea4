import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import type { CountryResponse, Reader } from 'maxmind';
import { ConfigError } from '../config/config-error.js';

/**
 * Country code of a request's client, or null when unknown. Synchronous: called per request.
 * `fromEdge`: the connection comes from an address in `trust_proxy`, the only peers whose country
 * header is believed (from anyone else it is a claim the client makes about itself).
 */
export type CountryResolver = (headers: IncomingHttpHeaders, ip: string, fromEdge: boolean) => string | null;

export interface CountryOptions {
  /** Lower-case name of a header set by a trusted edge (`cf-ipcountry`), or undefined. */
  readonly countryHeader: string | undefined;
  /** Path of a GeoIP2/GeoLite2 Country or City `.mmdb`, or undefined. */
  readonly geoipDb: string | undefined;
}

/**
 * A country code from the edge: two ASCII letters, or a letter and a digit for the edge's own
 * codes (Cloudflare's `T1` for Tor), upper-cased. `XX`, the edge's "unknown", is no answer.
 */
const EDGE_CODE = /^[A-Za-z][A-Za-z0-9]$/;

export function countryFromHeader(value: string | string[] | undefined): string | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return null;
  const trimmed = raw.trim();
  if (!EDGE_CODE.test(trimmed)) return null;
  const code = trimmed.toUpperCase();
  return code === 'XX' ? null : code;
}

/**
 * The edge's header first (from a `trust_proxy` peer only), else the local GeoIP database, else null. The database is read once
 * here (a bad `geoip_db` fails the start); lookups afterwards are synchronous and in memory.
 */
export async function createCountryResolver(options: CountryOptions): Promise<CountryResolver> {
  const { countryHeader } = options;
  const reader = options.geoipDb === undefined ? undefined : await openGeoip(options.geoipDb);
  const lookup = reader === undefined ? undefined : geoipLookup(reader);
  if (countryHeader === undefined && lookup === undefined) return () => null;
  return (headers, ip, fromEdge) => {
    const fromHeader =
      countryHeader === undefined || !fromEdge ? null : countryFromHeader(headers[countryHeader]);
    return fromHeader ?? lookup?.(ip) ?? null;
  };
}

async function openGeoip(path: string): Promise<Reader<CountryResponse>> {
  try {
    // Loaded only with a `geoip_db`: most servers never read one.
    const { default: maxmind } = await import('maxmind');
    const reader = await maxmind.open<CountryResponse>(path, { cache: { max: 10_000 } });
    return reader;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(`Setting "geoip_db": cannot open the GeoIP database ${path}: ${reason}`);
  }
}

function geoipLookup(reader: Reader<CountryResponse>): (ip: string) => string | null {
  const ipv4Only = reader.metadata.ipVersion === 4;
  return (ip) => {
    // A dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d.
    const address = ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
    const version = isIP(address);
    if (version === 0 || (version === 6 && ipv4Only)) return null;
    try {
      const found = reader.get(address);
      // The registered country stands in when the database has no location for the network.
      const code = found?.country?.iso_code ?? found?.registered_country?.iso_code;
      return code === undefined ? null : code.toUpperCase();
    } catch {
      return null;
    }
  };
}
