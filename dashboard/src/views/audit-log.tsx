import { useState } from 'preact/hooks';
import { api, query, type List } from '../api';
import { dateTime } from '../format';
import { Alert, Empty, Pager, useCursorPages, useLoad } from '../ui';
import { AUDIT_ACTIONS } from '../../../src/audit/action-names.js';

interface AuditEntry {
  id: string;
  action: string;
  object_id: string | null;
  actor: { type: 'api_key' | 'session' | 'cli'; id: string | null; name: string };
  ip: string | null;
  created_at: string;
}

// The server's own list, so the filter offers every action it records.
const ACTIONS = AUDIT_ACTIONS;

function who(actor: AuditEntry['actor']): string {
  if (actor.type === 'api_key') return `API key "${actor.name}"`;
  if (actor.type === 'cli') return 'operator (CLI)';
  return 'dashboard session';
}

/** The account's audit log (GET /v1/audit), newest first, in the Settings view. */
export function AuditLog() {
  const [action, setAction] = useState('');
  const pages = useCursorPages(action);
  const cursor = pages.cursor;
  const { data, error } = useLoad(
    () => api<List<AuditEntry>>('GET', `/audit${query({ limit: 25, action, cursor })}`),
    [action, cursor],
  );
  const rows = data?.data ?? [];
  return (
    <>
      <h2 class="section-title">Audit log</h2>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Audit filters">
        <label class="field">
          <span>Action</span>
          <select value={action} onChange={(e) => setAction(e.currentTarget.value)}>
            <option value="">All changes</option>
            {ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
      </form>
      {error !== null && <Alert>{error}</Alert>}
      <div class="card flush">
        {data !== undefined && rows.length === 0 ? (
          <Empty>No changes recorded.</Empty>
        ) : (
          <div class="table-wrap">
            <table class="table" aria-label="Audit log entries">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Action</th>
                  <th scope="col">Who</th>
                  <th scope="col">Object</th>
                  <th scope="col">IP</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((e) => (
                  <tr key={e.id}>
                    <td data-label="Time">{dateTime(e.created_at)}</td>
                    <td data-label="Action">
                      <code>{e.action}</code>
                    </td>
                    <td data-label="Who">{who(e.actor)}</td>
                    <td data-label="Object">
                      <code class="wrap">{e.object_id ?? '—'}</code>
                    </td>
                    <td data-label="IP">
                      <code>{e.ip ?? '—'}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
      <Pager {...pages.pager(data)} />
    </>
  );
}
