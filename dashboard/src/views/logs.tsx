import { api, listAll, query, type List, type LogRecord, type Token } from '../api';
import { dateTime } from '../format';
import { navigate } from '../router';
import { Alert, Empty, PageHeader, Pager, TokenOptions, useCursorPages, useLoad } from '../ui';

const OUTCOMES = ['true', 'false'];
const STATUSES = ['2xx', '4xx', '5xx'];

/** A filter from the address, or none when the address carries a value the view does not offer. */
function pick(params: URLSearchParams, name: string, allowed?: readonly string[]): string {
  const value = params.get(name) ?? '';
  return allowed === undefined || allowed.includes(value) ? value : '';
}

/**
 * The request log, newest first. Its filters live in the address (`/logs?token_id=…&status=5xx`), so
 * a filtered view can be bookmarked, shared and reloaded, and Back undoes a filter.
 */
export function Logs(props: { params: URLSearchParams }) {
  const tokenId = pick(props.params, 'token_id');
  const authorized = pick(props.params, 'authorized', OUTCOMES);
  const status = pick(props.params, 'status', STATUSES);
  const pages = useCursorPages(`${tokenId}\n${authorized}\n${status}`);
  const cursor = pages.cursor;
  const tokens = useLoad(() => listAll<Token>('/tokens'));
  const names = new Map((tokens.data?.items ?? []).map((t) => [t.token_id, t.name]));
  const { data, error } = useLoad(
    () =>
      api<List<LogRecord>>(
        'GET',
        `/logs${query({ limit: 50, token_id: tokenId, authorized, status, cursor })}`,
      ),
    [tokenId, authorized, status, cursor],
  );
  const filter = (change: Record<string, string>) =>
    navigate(`/logs${query({ token_id: tokenId, authorized, status, ...change })}`);
  const rows = data?.data ?? [];

  return (
    <section>
      <PageHeader title="Logs" lead="Every request the proxy handled for your tokens, newest first." />
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filters">
        <label class="field">
          <span>Token</span>
          <select value={tokenId} onChange={(e) => filter({ token_id: e.currentTarget.value })}>
            <option value="">All tokens</option>
            <TokenOptions tokens={tokens.data?.items ?? []} />
          </select>
        </label>
        <label class="field">
          <span>Outcome</span>
          <select value={authorized} onChange={(e) => filter({ authorized: e.currentTarget.value })}>
            <option value="">Authorized and refused</option>
            <option value="true">Authorized</option>
            <option value="false">Refused (origin or IP)</option>
          </select>
        </label>
        <label class="field">
          <span>Status</span>
          <select value={status} onChange={(e) => filter({ status: e.currentTarget.value })}>
            <option value="">Any status</option>
            <option value="2xx">2xx success</option>
            <option value="4xx">4xx refused or client error</option>
            <option value="5xx">5xx provider error</option>
          </select>
        </label>
      </form>
      {error !== null && <Alert>{error}</Alert>}
      <div class="card flush">
        {data !== undefined && rows.length === 0 ? (
          <Empty>No requests match.</Empty>
        ) : (
          <div class="table-wrap">
            <table class="table" aria-label="Request log">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Token</th>
                  <th scope="col">Status</th>
                  <th scope="col">Origin</th>
                  <th scope="col">IP</th>
                  <th scope="col">Path</th>
                  <th scope="col" class="num">
                    Added latency
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.request_id}>
                    <td data-label="Time">{dateTime(r.timestamp)}</td>
                    <td data-label="Token">
                      {r.token_id === null ? '(no token)' : (names.get(r.token_id) ?? '(deleted)')}
                    </td>
                    <td data-label="Status">
                      <span class={`badge ${r.status < 400 ? 'badge-active' : 'badge-revoked'}`}>
                        {r.status}
                      </span>
                      {!r.authorized && <span class="muted"> refused</span>}
                    </td>
                    <td data-label="Origin">
                      <code class="wrap" title={r.origin ?? undefined}>
                        {r.origin ?? '(none)'}
                      </code>
                    </td>
                    <td data-label="IP">
                      <code>{r.ip}</code>
                    </td>
                    <td data-label="Path">
                      <code class="wrap" title={r.path}>
                        {r.path}
                      </code>
                    </td>
                    <td class="num" data-label="Added latency">
                      {r.latency_ms} ms
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
      <Pager {...pages.pager(data)} />
    </section>
  );
}
