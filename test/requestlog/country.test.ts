import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/load.js';
import { countryFromHeader, createCountryResolver } from '../../src/requestlog/country.js';
import { buildMmdb, countryRecord } from './mmdb.js';

let dir: string;
let dualStack: string;
let v4Only: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-geoip-'));
  dualStack = path.join(dir, 'country-v6.mmdb');
  await writeFile(
    dualStack,
    buildMmdb({
      ipVersion: 6,
      networks: [
        { cidr: '203.0.113.0/24', data: countryRecord('DE') },
        { cidr: '198.51.100.0/25', data: countryRecord('fr') },
        { cidr: '198.51.100.128/25', data: countryRecord(null, 'JP') },
        { cidr: '192.0.2.0/24', data: countryRecord(null) },
        { cidr: '2001:db8::/32', data: countryRecord('NL') },
      ],
    }),
  );
  v4Only = path.join(dir, 'country-v4.mmdb');
  await writeFile(
    v4Only,
    buildMmdb({ ipVersion: 4, networks: [{ cidr: '0.0.0.0/1', data: countryRecord('US') }] }),
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('countryFromHeader', () => {
  it.each([
    ['de', 'DE'],
    [' Us ', 'US'],
    ['T1', 'T1'],
    [['gb', 'fr'], 'GB'],
    ['XX', null],
    ['xx', null],
    ['', null],
    ['DEU', null],
    ['D', null],
    ['1A', null],
    ['D-', null],
    ['ü1', null],
    [undefined, null],
  ])('%j → %j', (value, expected) => {
    expect(countryFromHeader(value)).toBe(expected);
  });
});

describe('createCountryResolver', () => {
  it('answers null with neither a header nor a database', async () => {
    const countryOf = await createCountryResolver({ countryHeader: undefined, geoipDb: undefined });
    expect(countryOf({ 'cf-ipcountry': 'DE' }, '203.0.113.9', true)).toBeNull();
  });

  it('reads only the configured header', async () => {
    const countryOf = await createCountryResolver({ countryHeader: 'cf-ipcountry', geoipDb: undefined });
    expect(countryOf({ 'cf-ipcountry': 'ch' }, '203.0.113.9', true)).toBe('CH');
    expect(countryOf({ 'x-country': 'CH' }, '203.0.113.9', true)).toBeNull();
    expect(countryOf({ 'cf-ipcountry': 'not a code' }, '203.0.113.9', true)).toBeNull();
  });

  it('looks addresses up in a GeoIP database, IPv4 (also mapped) and IPv6', async () => {
    const countryOf = await createCountryResolver({ countryHeader: undefined, geoipDb: dualStack });
    expect(countryOf({}, '203.0.113.9', true)).toBe('DE');
    expect(countryOf({}, '::ffff:203.0.113.200', true)).toBe('DE');
    expect(countryOf({}, '198.51.100.1', true)).toBe('FR');
    // No location, only the registered country.
    expect(countryOf({}, '198.51.100.200', true)).toBe('JP');
    expect(countryOf({}, '192.0.2.1', true)).toBeNull();
    expect(countryOf({}, '2001:db8::1', true)).toBe('NL');
    expect(countryOf({}, '2001:db9::1', true)).toBeNull();
    expect(countryOf({}, '10.0.0.1', true)).toBeNull();
    expect(countryOf({}, 'not-an-ip', true)).toBeNull();
    expect(countryOf({}, '', true)).toBeNull();
  });

  it("believes the header only from the edge (a trust_proxy peer): anyone else's is the client's own claim", async () => {
    const headerOnly = await createCountryResolver({ countryHeader: 'cf-ipcountry', geoipDb: undefined });
    expect(headerOnly({ 'cf-ipcountry': 'KP' }, '203.0.113.9', false)).toBeNull();
    const withDb = await createCountryResolver({ countryHeader: 'cf-ipcountry', geoipDb: dualStack });
    expect(withDb({ 'cf-ipcountry': 'KP' }, '203.0.113.9', false)).toBe('DE');
    expect(withDb({ 'cf-ipcountry': 'KP' }, '203.0.113.9', true)).toBe('KP');
  });

  it('prefers a valid header and falls back to the database', async () => {
    const countryOf = await createCountryResolver({ countryHeader: 'cf-ipcountry', geoipDb: dualStack });
    expect(countryOf({ 'cf-ipcountry': 'SE' }, '203.0.113.9', true)).toBe('SE');
    expect(countryOf({ 'cf-ipcountry': 'XX' }, '203.0.113.9', true)).toBe('DE');
    expect(countryOf({ 'cf-ipcountry': '???' }, '203.0.113.9', true)).toBe('DE');
    expect(countryOf({}, '203.0.113.9', true)).toBe('DE');
  });

  it('does not look IPv6 addresses up in an IPv4 database', async () => {
    const countryOf = await createCountryResolver({ countryHeader: undefined, geoipDb: v4Only });
    expect(countryOf({}, '1.2.3.4', true)).toBe('US');
    expect(countryOf({}, '::ffff:1.2.3.4', true)).toBe('US');
    expect(countryOf({}, '200.1.1.1', true)).toBeNull();
    expect(countryOf({}, '::1', true)).toBeNull();
    expect(countryOf({}, '2001:db8::1', true)).toBeNull();
  });

  it('fails the start naming geoip_db when the database cannot be read', async () => {
    const missing = path.join(dir, 'missing.mmdb');
    const notMmdb = path.join(dir, 'text.mmdb');
    await writeFile(notMmdb, 'this is not a MaxMind database\n'.repeat(10));
    for (const geoipDb of [missing, notMmdb, dir]) {
      const failing = createCountryResolver({ countryHeader: undefined, geoipDb });
      await expect(failing).rejects.toBeInstanceOf(ConfigError);
      await expect(failing).rejects.toThrow(/geoip_db/);
      await expect(failing).rejects.toThrow(geoipDb);
    }
  });
});
