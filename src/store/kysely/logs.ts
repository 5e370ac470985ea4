import type { Insertable, Kysely, SelectQueryBuilder } from 'kysely';
import type { AnomalyEntry, Page, PageQuery, RequestLogEntry } from '../records.js';
import type { AnomaliesTable, Database, RequestLogsTable } from '../schema.js';
import type { AnomalyRepo, RequestLogFilter, RequestLogRepo } from '../store.js';
import type { RepoContext } from './context.js';
import { toAnomaly, toPage, toRequestLog } from './rows.js';

type LogTable = 'request_logs' | 'anomalies';

/**
 * Rows per INSERT statement: 13 columns × 500 stays far below SQLite's 32,766 and PostgreSQL's
 * 65,535 bound parameters, whatever batch size the writer chooses.
 */
const ROWS_PER_STATEMENT = 500;

/**
 * Inserts in one transaction, statement by statement. Callers skip ids already stored: a batch
 * retried after a failure whose outcome was unclear (a commit whose answer was lost) must not fail
 * forever on its own rows.
 */
async function insertInChunks<R>(
  db: Kysely<Database>,
  rows: readonly R[],
  insert: (trx: Kysely<Database>, chunk: R[]) => Promise<unknown>,
): Promise<void> {
  if (rows.length === 0) return;
  await db.transaction().execute(async (trx) => {
    for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
      await insert(trx, rows.slice(start, start + ROWS_PER_STATEMENT));
    }
  });
}

/** Newest first by (timestamp, id), one row more than asked (its presence is `hasMore`). */
function newestFirst<T extends LogTable, O>(
  query: SelectQueryBuilder<Database, T, O>,
  accountId: string,
  tokenId: string | undefined,
  page: PageQuery,
): Promise<O[]> {
  const { after } = page;
  // The casts let one helper serve both tables: they share these four columns.
  let q = query as unknown as SelectQueryBuilder<Database, LogTable, O>;
  q = q.where('account_id', '=', accountId);
  if (tokenId !== undefined) q = q.where('token_id', '=', tokenId);
  if (after !== undefined) {
    q = q.where((eb) => eb(eb.refTuple('timestamp', 'id'), '<', eb.tuple(after.createdAt, after.id)));
  }
  return q
    .orderBy('timestamp', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
}

export class KyselyRequestLogRepo implements RequestLogRepo {
  constructor(private readonly ctx: RepoContext) {}

  insertMany(entries: readonly RequestLogEntry[]): Promise<void> {
    return insertInChunks(this.ctx.db, entries.map(requestLogRow), (trx, chunk) =>
      trx
        .insertInto('request_logs')
        .values(chunk)
        .onConflict((oc) => oc.column('id').doNothing())
        .execute(),
    );
  }

  async list(accountId: string, filter: RequestLogFilter, page: PageQuery): Promise<Page<RequestLogEntry>> {
    let query = this.ctx.db.selectFrom('request_logs').selectAll();
    if (filter.authorized !== undefined) query = query.where('authorized', '=', filter.authorized ? 1 : 0);
    const rows = await newestFirst(query, accountId, filter.tokenId, page);
    return toPage(rows, page.limit, toRequestLog);
  }
}

export class KyselyAnomalyRepo implements AnomalyRepo {
  constructor(private readonly ctx: RepoContext) {}

  insertMany(entries: readonly AnomalyEntry[]): Promise<void> {
    return insertInChunks(this.ctx.db, entries.map(anomalyRow), (trx, chunk) =>
      trx
        .insertInto('anomalies')
        .values(chunk)
        .onConflict((oc) => oc.column('id').doNothing())
        .execute(),
    );
  }

  async list(
    accountId: string,
    filter: { readonly tokenId?: string | undefined },
    page: PageQuery,
  ): Promise<Page<AnomalyEntry>> {
    const query = this.ctx.db.selectFrom('anomalies').selectAll();
    const rows = await newestFirst(query, accountId, filter.tokenId, page);
    return toPage(rows, page.limit, toAnomaly);
  }
}

function requestLogRow(entry: RequestLogEntry): Insertable<RequestLogsTable> {
  return {
    id: entry.id,
    account_id: entry.accountId,
    token_id: entry.tokenId,
    provider: entry.provider,
    timestamp: entry.timestamp,
    origin: entry.origin,
    ip: entry.ip,
    country: entry.country,
    pop: entry.pop,
    path: entry.path,
    status: entry.status,
    authorized: entry.authorized ? 1 : 0,
    latency_ms: Math.round(entry.latencyMs),
  };
}

function anomalyRow(entry: AnomalyEntry): Insertable<AnomaliesTable> {
  return {
    id: entry.id,
    account_id: entry.accountId,
    token_id: entry.tokenId,
    timestamp: entry.timestamp,
    origin: entry.origin,
    ip: entry.ip,
    country: entry.country,
    path: entry.path,
    reason: entry.reason,
    kind: entry.kind,
    details: entry.details === null || entry.details === undefined ? null : JSON.stringify(entry.details),
  };
}
