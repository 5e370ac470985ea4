import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { expect } from 'vitest';
import { filesUnder } from '../support/files.js';

/**
 * Secrets never leave memory in the clear (DESIGN §1, §8): real keys are only stored encrypted, and
 * sanitized tokens and account API keys only as SHA-256 digests. The secrets-*.test.ts files use
 * distinctive values and look for them, with the scanner below, in several encodings, everywhere the
 * server could have put them.
 */

export function distinctive(label: string): string {
  return `sk-DISTINCTIVE-SECRET-${label}-${randomBytes(12).toString('hex')}`;
}

/**
 * The byte patterns that would betray `secret`: the text itself, its hex (both cases), and its
 * base64/base64url at each of the three alignments it can have inside a longer encoded string.
 */
function encodings(secret: string): { name: string; bytes: Buffer }[] {
  const raw = Buffer.from(secret, 'utf8');
  const forms: { name: string; bytes: Buffer }[] = [
    { name: 'utf8', bytes: raw },
    { name: 'utf16le', bytes: Buffer.from(secret, 'utf16le') },
    { name: 'hex', bytes: Buffer.from(raw.toString('hex'), 'latin1') },
    { name: 'HEX', bytes: Buffer.from(raw.toString('hex').toUpperCase(), 'latin1') },
  ];
  for (let shift = 0; shift < 3; shift++) {
    const padded = Buffer.concat([Buffer.alloc(shift), raw]);
    for (const encoding of ['base64', 'base64url'] as const) {
      const text = padded.toString(encoding);
      // Drop characters that depend on the bytes before (first) or after (last) the secret.
      const start = Math.ceil((shift * 4) / 3) + 1;
      const stable = text.slice(start, text.length - 4);
      forms.push({ name: `${encoding}+${shift}`, bytes: Buffer.from(stable, 'latin1') });
    }
  }
  return forms;
}

/** The encodings of any of `secrets` found in `haystack`, as `secret-label/encoding`. */
export function leaks(haystack: Buffer, secrets: Record<string, string>): string[] {
  const found: string[] = [];
  for (const [label, secret] of Object.entries(secrets)) {
    for (const form of encodings(secret))
      if (haystack.includes(form.bytes)) found.push(`${label}/${form.name}`);
  }
  return found;
}

/** Every file of the data dir, as one labelled buffer per file. */
export async function dataDirContents(dir: string): Promise<{ file: string; bytes: Buffer }[]> {
  const files = await filesUnder(dir);
  return Promise.all(
    files.map(async (file) => ({ file: path.relative(dir, file), bytes: await readFile(file) })),
  );
}

/** Every row of every table of the PostgreSQL database, text as UTF-8 and bytea as raw bytes. */
export async function postgresDump(database: string): Promise<Buffer> {
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    const tables = await client.query<{ schemaname: string; tablename: string }>(
      "SELECT schemaname, tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
    );
    expect(tables.rows.length).toBeGreaterThan(0);
    const parts: Buffer[] = [];
    for (const { schemaname, tablename } of tables.rows) {
      const ident = `"${schemaname.replace(/"/g, '""')}"."${tablename.replace(/"/g, '""')}"`;
      const rows = await client.query<Record<string, unknown>>(`SELECT * FROM ${ident}`);
      parts.push(Buffer.from(`\n== ${ident}\n`));
      for (const row of rows.rows) {
        for (const value of Object.values(row)) {
          if (Buffer.isBuffer(value)) parts.push(value);
          else if (value === null || value === undefined) parts.push(Buffer.from('null'));
          else if (typeof value === 'object') parts.push(Buffer.from(JSON.stringify(value)));
          else parts.push(Buffer.from(String(value as string | number | boolean | bigint)));
          parts.push(Buffer.from('\t'));
        }
      }
    }
    // The write-ahead log of a scratch database is shared with others; rows are what this database holds.
    return Buffer.concat(parts);
  } finally {
    await client.end();
  }
}
