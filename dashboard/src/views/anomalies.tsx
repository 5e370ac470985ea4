import { useEffect, useState } from 'preact/hooks';
import { api, listAll, query, type Anomaly, type List, type Token } from '../api';
import { dateTime, reasonLabel } from '../format';
import { navigate } from '../router';
import {
  Alert,
  ConfirmDialog,
  Empty,
  PageHeader,
  Pager,
  StatusBadge,
  TokenOptions,
  errorText,
  useCursorPages,
  useLoad,
} from '../ui';

const POLL_MS = 2000;
const MAX_BACKOFF_MS = 30_000;

/**
 * The anomaly log, newest first. Its first page is kept live by polling (one request every 2 s,
 * backing off to 30 s while the server does not answer, paused while the tab is hidden); older pages
 * hold still while read, so entries do not move under the reader.
 */
export function Anomalies(props: { tokenId: string | undefined }) {
  const [page, setPage] = useState<List<Anomaly> | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [revoke, setRevoke] = useState<Token | null>(null);
  // A token filter's pages start on the newest, without a request carrying another filter's cursor.
  const pages = useCursorPages(props.tokenId ?? '');
  const cursor = pages.cursor;
  const tokens = useLoad(() => listAll<Token>('/tokens'));
  const byId = new Map((tokens.data?.items ?? []).map((t) => [t.token_id, t]));
  const live = cursor === undefined;

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let delay = POLL_MS;
    const load = async () => {
      if (document.visibilityState === 'visible' || !live) {
        try {
          const next = await api<List<Anomaly>>(
            'GET',
            `/anomalies${query({ limit: 50, token_id: props.tokenId, cursor })}`,
          );
          if (stopped) return;
          setPage(next);
          setError(null);
          delay = POLL_MS;
        } catch (err) {
          if (stopped) return;
          setError(errorText(err));
          delay = Math.min(MAX_BACKOFF_MS, delay * 2);
        }
      }
      if (!stopped && live) timer = setTimeout(() => void load(), delay);
    };
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [props.tokenId, cursor]);
  const rows = page?.data;

  const filtered = props.tokenId === undefined ? undefined : byId.get(props.tokenId);
  return (
    <section>
      <PageHeader
        title="Anomalies"
        lead="Requests from origins or IPs your tokens do not allow, newest first. New entries appear as they happen."
      >
        {live && (
          <span class={error === null ? 'live' : 'live offline'} aria-hidden="true">
            {error === null ? 'Live' : 'Offline'}
          </span>
        )}
      </PageHeader>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filters">
        <label class="field">
          <span>Token</span>
          <select
            value={props.tokenId ?? ''}
            onChange={(e) => {
              const id = e.currentTarget.value;
              navigate(id === '' ? '/anomalies' : `/anomalies${query({ token_id: id })}`);
            }}
          >
            <option value="">All tokens</option>
            {props.tokenId !== undefined && !byId.has(props.tokenId) && (
              <option value={props.tokenId}>{props.tokenId}</option>
            )}
            <TokenOptions tokens={tokens.data?.items ?? []} />
          </select>
        </label>
      </form>
      {props.tokenId !== undefined && (
        <div class="filter-note">
          <span>
            Showing token <strong class="clip">{filtered?.name ?? props.tokenId}</strong>
          </span>
          <button type="button" class="button small" onClick={() => navigate('/anomalies')}>
            Show all tokens
          </button>
        </div>
      )}
      {error !== null && <Alert>{error}</Alert>}
      <div class="card flush">
        {rows !== undefined && rows.length === 0 ? (
          <Empty>No anomalies. Every request came from an allowed origin and IP.</Empty>
        ) : (
          <div class="table-wrap">
            <table class="table" aria-label="Anomalies">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Token</th>
                  <th scope="col">Origin</th>
                  <th scope="col">IP</th>
                  <th scope="col">Country</th>
                  <th scope="col">Path</th>
                  <th scope="col">Reason</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {(rows ?? []).map((a) => {
                  const token = byId.get(a.token_id);
                  return (
                    <tr key={a.anomaly_id}>
                      <td data-label="Time">{dateTime(a.timestamp)}</td>
                      <td class="strong" data-label="Token">
                        {token?.name ?? (tokens.data === undefined ? '…' : '(unknown token)')}
                      </td>
                      <td data-label="Origin">
                        <code class="wrap" title={a.origin ?? undefined}>
                          {a.origin ?? '(none)'}
                        </code>
                      </td>
                      <td data-label="IP">
                        <code>{a.ip}</code>
                      </td>
                      <td data-label="Country">{a.country ?? '—'}</td>
                      <td data-label="Path">
                        <code class="wrap" title={a.path}>
                          {a.path}
                        </code>
                      </td>
                      <td data-label="Reason">
                        <span class="badge badge-revoked">{reasonLabel(a.reason)}</span>
                      </td>
                      <td class="actions">
                        {token?.status === 'active' ? (
                          <button
                            type="button"
                            class="button small danger-outline"
                            aria-label={`Revoke ${token.name}`}
                            onClick={() => setRevoke(token)}
                          >
                            Revoke
                          </button>
                        ) : token !== undefined ? (
                          <StatusBadge status={token.status} />
                        ) : null}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </div>
      {revoke !== null && (
        <ConfirmDialog
          title="Revoke this token?"
          confirmLabel="Revoke token"
          onClose={() => setRevoke(null)}
          onConfirm={async () => {
            await api('DELETE', `/tokens/${encodeURIComponent(revoke.token_id)}`);
            await tokens.reload();
          }}
        >
          <p>
            <strong>{revoke.name}</strong> stops working on its next request. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
      <Pager {...pages.pager(page)} />
    </section>
  );
}
