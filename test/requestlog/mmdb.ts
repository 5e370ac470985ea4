import { isIPv4 } from 'node:net';

/**
 * A minimal MaxMind DB (format 2.0) writer for tests: no MMDB fixture ships in the `maxmind` or
 * `mmdb-lib` packages and no writer package works offline, so tests build their own small database
 * from the published format (https://maxmind.github.io/MaxMind-DB/). 24-bit records; maps, arrays,
 * strings, unsigned integers and booleans; networks must not overlap.
 */

type Value = string | number | bigint | boolean | readonly Value[] | { readonly [key: string]: Value };

const TYPE = { string: 2, uint16: 5, uint32: 6, map: 7, uint64: 9, array: 11, boolean: 14 } as const;

function control(type: number, size: number): Buffer {
  let sizeBits: number;
  let extra: Buffer;
  if (size < 29) {
    sizeBits = size;
    extra = Buffer.alloc(0);
  } else if (size < 29 + 256) {
    sizeBits = 29;
    extra = Buffer.from([size - 29]);
  } else if (size < 285 + 65536) {
    sizeBits = 30;
    extra = Buffer.alloc(2);
    extra.writeUInt16BE(size - 285);
  } else {
    sizeBits = 31;
    extra = Buffer.alloc(3);
    extra.writeUIntBE(size - 65821, 0, 3);
  }
  // Types above 7 are "extended": type bits 0, then a byte holding type - 7.
  const head = type <= 7 ? [(type << 5) | sizeBits] : [sizeBits, type - 7];
  return Buffer.concat([Buffer.from(head), extra]);
}

function unsigned(type: number, value: number | bigint): Buffer {
  let hex = BigInt(value).toString(16);
  if (hex === '0') hex = '';
  if (hex.length % 2 === 1) hex = `0${hex}`;
  const bytes = Buffer.from(hex, 'hex');
  return Buffer.concat([control(type, bytes.length), bytes]);
}

function isList(value: Value): value is readonly Value[] {
  return Array.isArray(value);
}

export function encodeValue(value: Value): Buffer {
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([control(TYPE.string, bytes.length), bytes]);
  }
  if (typeof value === 'boolean') return control(TYPE.boolean, value ? 1 : 0);
  if (typeof value === 'bigint') return unsigned(TYPE.uint64, value);
  if (typeof value === 'number') return unsigned(value < 65536 ? TYPE.uint16 : TYPE.uint32, value);
  if (isList(value)) {
    return Buffer.concat([control(TYPE.array, value.length), ...value.map((item) => encodeValue(item))]);
  }
  const entries = Object.entries(value);
  return Buffer.concat([
    control(TYPE.map, entries.length),
    ...entries.flatMap(([key, item]) => [encodeValue(key), encodeValue(item)]),
  ]);
}

function addressBits(address: string, ipVersion: 4 | 6): number[] {
  let bytes: number[];
  if (isIPv4(address)) {
    const v4 = address.split('.').map(Number);
    bytes = ipVersion === 6 ? [...new Array<number>(12).fill(0), ...v4] : v4;
  } else {
    if (ipVersion === 4) throw new Error('an IPv4 database holds no IPv6 networks');
    const [left = '', right = ''] = address.split('::');
    const groups = (part: string) => (part === '' ? [] : part.split(':'));
    const l = groups(left);
    const r = groups(right);
    const all = [...l, ...new Array<string>(8 - l.length - r.length).fill('0'), ...r];
    bytes = all.flatMap((group) => {
      const n = parseInt(group, 16);
      return [n >> 8, n & 0xff];
    });
  }
  return bytes.flatMap((byte) => Array.from({ length: 8 }, (_, i) => (byte >> (7 - i)) & 1));
}

type RecordRef = { node: number } | { data: number } | null;

export interface MmdbNetwork {
  /** `a.b.c.d/len` or an IPv6 CIDR; an IPv4 network in an IPv6 database sits under ::/96. */
  readonly cidr: string;
  readonly data: Value;
}

export function buildMmdb(options: {
  ipVersion: 4 | 6;
  networks: readonly MmdbNetwork[];
  databaseType?: string;
}): Buffer {
  const { ipVersion } = options;
  const nodes: [RecordRef, RecordRef][] = [[null, null]];
  const chunks: Buffer[] = [];
  let dataSize = 0;

  for (const network of options.networks) {
    const [address = '', lengthText = ''] = network.cidr.split('/');
    const offset = isIPv4(address) && ipVersion === 6 ? 96 : 0;
    const length = Number(lengthText) + offset;
    const bits = addressBits(address, ipVersion).slice(0, length);
    const encoded = encodeValue(network.data);
    const data = dataSize;
    chunks.push(encoded);
    dataSize += encoded.length;

    let current = 0;
    for (const [depth, bit] of bits.entries()) {
      const node = nodes[current];
      if (node === undefined) throw new Error('broken tree');
      if (depth === bits.length - 1) {
        node[bit] = { data };
        break;
      }
      const next = node[bit] ?? null;
      if (next !== null && 'data' in next) throw new Error(`network ${network.cidr} overlaps another`);
      if (next === null) {
        nodes.push([null, null]);
        node[bit] = { node: nodes.length - 1 };
      }
      current = (node[bit] as { node: number }).node;
    }
  }

  const nodeCount = nodes.length;
  const value = (ref: RecordRef): number =>
    ref === null ? nodeCount : 'node' in ref ? ref.node : nodeCount + 16 + ref.data;
  const tree = Buffer.alloc(nodeCount * 6);
  for (const [i, [left, right]] of nodes.entries()) {
    tree.writeUIntBE(value(left), i * 6, 3);
    tree.writeUIntBE(value(right), i * 6 + 3, 3);
  }

  const metadata = encodeValue({
    node_count: nodeCount,
    record_size: 24,
    ip_version: ipVersion,
    database_type: options.databaseType ?? 'Test-Country',
    languages: ['en'],
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    build_epoch: BigInt(Math.floor(Date.now() / 1000)),
    description: { en: 'tokenproxy test database' },
  });
  return Buffer.concat([
    tree,
    Buffer.alloc(16),
    ...chunks,
    Buffer.from('abcdef4d61784d696e642e636f6d', 'hex'),
    metadata,
  ]);
}

/** The record shape of GeoIP2/GeoLite2 Country databases, reduced to what lookups read. */
export function countryRecord(country: string | null, registered?: string): Value {
  return {
    ...(country === null ? {} : { country: { iso_code: country, names: { en: country } } }),
    ...(registered === undefined
      ? {}
      : { registered_country: { iso_code: registered, names: { en: registered } } }),
  };
}
