import type { Insertable, SelectQueryBuilder } from 'kysely';
import { wholeMs } from '../../rules/whole-ms.js';
import type { AnomalyEntry, Page, PageQuery, RequestLogEntry } from '../records.js';
import type { AnomaliesTable, Database, RequestLogsTable } from '../schema.js';
import type { AnomalyRepo, RequestLogFilter, RequestLogRepo } from '../store.js';
import type { RepoContext } from './context.js';
import { BatchInsert } from './batch-insert.js';
import { toAnomaly, toPage, toRequestLog } from './rows.js';

type LogTable = 'request_logs' | 'anomalies';

/** Rows whose columns the batch INSERTs are compiled from; the values never reach the database. */
const SAMPLE_REQUEST_LOG: RequestLogEntry = {
  id: 'req_sample',
  timestamp: '1970-01-01T00:00:00.000Z',
  accountId: null,
  tokenId: null,
  provider: null,
  origin: null,
  ip: '0.0.0.0',
  country: null,
  pop: 'sample',
  path: '/',
  status: 0,
  authorized: false,
  latencyMs: 0,
  errorCode: null,
  model: null,
  inputTokens: null,
  outputTokens: null,
  costMicros: null,
};
const SAMPLE_ANOMALY: AnomalyEntry = {
  id: 'req_sample',
  accountId: 'acc_sample',
  tokenId: 'tok_sample',
  timestamp: '1970-01-01T00:00:00.000Z',
  origin: null,
  ip: '0.0.0.0',
  country: null,
  path: '/',
  reason: 'sample',
  kind: 'sample',
  details: null,
};

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
  readonly #insert: BatchInsert<Insertable<RequestLogsTable>>;

  constructor(private readonly ctx: RepoContext) {
    this.#insert = new BatchInsert(
      (rows) =>
        ctx.db
          .insertInto('request_logs')
          .values(rows)
          .onConflict((oc) => oc.column('id').doNothing())
          .compile(),
      requestLogRow(SAMPLE_REQUEST_LOG),
    );
  }

  /**
   * One transaction. Ids already stored are skipped: a batch retried after a failure whose outcome
   * was unclear (a commit whose answer was lost) must not fail forever on its own rows.
   */
  insertMany(entries: readonly RequestLogEntry[]): Promise<void> {
    return this.#insert.run(this.ctx.db, entries.map(requestLogRow));
  }

  async list(accountId: string, filter: RequestLogFilter, page: PageQuery): Promise<Page<RequestLogEntry>> {
    let query = this.ctx.db.selectFrom('request_logs').selectAll();
    if (filter.authorized !== undefined) query = query.where('authorized', '=', filter.authorized ? 1 : 0);
    if (filter.status !== undefined) {
      query = query.where('status', '>=', filter.status[0]).where('status', '<=', filter.status[1]);
    }
    if (filter.since !== undefined) query = query.where('timestamp', '>=', filter.since);
    if (filter.until !== undefined) query = query.where('timestamp', '<', filter.until);
    if (filter.errorCode !== undefined) query = query.where('error_code', '=', filter.errorCode);
    if (filter.ip !== undefined) query = query.where('ip', '=', filter.ip);
    const rows = await newestFirst(query, accountId, filter.tokenId, page);
    return toPage(rows, page.limit, toRequestLog);
  }

  async get(accountId: string, requestId: string): Promise<RequestLogEntry | undefined> {
    const row = await this.ctx.db
      .selectFrom('request_logs')
      .selectAll()
      .where('id', '=', requestId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row === undefined ? undefined : toRequestLog(row);
  }
}

export class KyselyAnomalyRepo implements AnomalyRepo {
  readonly #insert: BatchInsert<Insertable<AnomaliesTable>>;

  constructor(private readonly ctx: RepoContext) {
    this.#insert = new BatchInsert(
      (rows) =>
        ctx.db
          .insertInto('anomalies')
          .values(rows)
          .onConflict((oc) => oc.column('id').doNothing())
          .compile(),
      anomalyRow(SAMPLE_ANOMALY),
    );
  }

  /** As for request logs: one transaction, ids already stored skipped. */
  insertMany(entries: readonly AnomalyEntry[]): Promise<void> {
    return this.#insert.run(this.ctx.db, entries.map(anomalyRow));
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
    latency_ms: wholeMs(entry.latencyMs),
    error_code: entry.errorCode,
    model: entry.model,
    input_tokens: entry.inputTokens,
    output_tokens: entry.outputTokens,
    cost_micros: entry.costMicros,
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
