import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { transact } from './transact.js';

/**
 * Rows per INSERT statement, largest first: a batch of 90 rows goes out as 64 + 16 + 8 + 2. So a
 * table has nine INSERT texts in all, each compiled by Kysely once per store and (on SQLite) planned
 * once per connection, where a new text per batch cost ~7 µs of CPU per row in compiling and
 * planning. Powers of two keep the statements per batch few (at most 8 below 256 rows), which is
 * what counts on PostgreSQL, where each is a round trip: measured against one statement per batch,
 * CPU and time per row were lower on both databases for batches of 20 to 200 rows, and 64/8/1
 * (up to 14 statements) was slower on PostgreSQL for small batches. 256 rows × 13 columns stays far
 * below SQLite's 32,766 and PostgreSQL's 65,535 bound parameters.
 */
export const ROWS_PER_STATEMENT = [256, 128, 64, 32, 16, 8, 4, 2, 1] as const;

type Row = Readonly<Record<string, unknown>>;

/**
 * A multi-row INSERT whose SQL Kysely compiles once per statement size, from a sample row; each
 * batch only supplies the values, in the sample's column order. `compile` must build the same
 * statement for any rows with the sample's columns, as `db.insertInto(t).values(rows)…compile()` does.
 */
export class BatchInsert<R extends Row> {
  readonly #sample: R;
  readonly #columns: readonly string[];
  readonly #texts = new Map<number, string>();

  constructor(
    private readonly compile: (rows: R[]) => CompiledQuery,
    sample: R,
  ) {
    // Kysely leaves an undefined value's column out, which would make the compiled column list
    // differ from the one the values are flattened in.
    for (const [column, value] of Object.entries(sample)) {
      if (value === undefined) throw new TypeError(`the sample row has no value for ${column}`);
    }
    this.#sample = sample;
    this.#columns = Object.keys(sample);
  }

  /** The statements that insert `rows`, in order. Exposed for the test that checks them against Kysely. */
  statements(rows: readonly R[]): CompiledQuery[] {
    const statements: CompiledQuery[] = [];
    let start = 0;
    for (const size of ROWS_PER_STATEMENT) {
      while (rows.length - start >= size) {
        statements.push(CompiledQuery.raw(this.#text(size), this.#parameters(rows, start, size)));
        start += size;
      }
    }
    return statements;
  }

  /** Inserts every row in one transaction (all or none). */
  async run(db: Kysely<Database>, rows: readonly R[]): Promise<void> {
    if (rows.length === 0) return;
    const statements = this.statements(rows);
    await transact(db, async (trx) => {
      for (const statement of statements) await trx.executeQuery(statement);
    });
  }

  #text(size: number): string {
    let text = this.#texts.get(size);
    if (text === undefined) {
      text = this.compile(new Array<R>(size).fill(this.#sample)).sql;
      this.#texts.set(size, text);
    }
    return text;
  }

  #parameters(rows: readonly R[], start: number, size: number): unknown[] {
    const columns = this.#columns;
    const parameters = new Array<unknown>(size * columns.length);
    let k = 0;
    for (let i = start; i < start + size; i++) {
      const row = rows[i] as R;
      for (const column of columns) {
        const value = row[column];
        if (value === undefined) throw new TypeError(`a row for the batch insert has no value for ${column}`);
        parameters[k++] = value;
      }
    }
    return parameters;
  }
}
