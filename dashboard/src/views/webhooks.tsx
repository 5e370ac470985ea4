import { useState } from 'preact/hooks';
import { api, listAll, type Delivery, type List, type Webhook } from '../api';
import { dateTime, lines } from '../format';
import { Alert, ConfirmDialog, Empty, FormDialog, PageHeader, errorText, useLoad } from '../ui';

export function Webhooks() {
  const { data, error, reload } = useLoad(() => listAll<Webhook>('/webhooks'));
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const [remove, setRemove] = useState<Webhook | null>(null);
  const hooks = data?.items ?? [];
  return (
    <section>
      <PageHeader
        title="Webhooks"
        lead="Endpoints that receive signed events: token revoked or expired, breach detected."
      >
        <button type="button" class="button primary" onClick={() => setAdding(true)}>
          Add endpoint
        </button>
      </PageHeader>
      {error !== null && <Alert>{error}</Alert>}
      {secret !== null && (
        <div class="card created" role="status">
          <h2>Endpoint added: copy its signing secret now</h2>
          <p class="muted">Verify each delivery's signature with it. It is not shown again.</p>
          <div class="copy-row">
            <input readOnly value={secret} aria-label="Signing secret" spellcheck={false} />
            <button type="button" class="button" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      {data !== undefined && hooks.length === 0 && (
        <div class="card">
          <Empty>No endpoints. Add one to get events as they happen.</Empty>
        </div>
      )}
      {hooks.map((w) => (
        <WebhookCard key={w.webhook_id} webhook={w} onDelete={() => setRemove(w)} onChanged={reload} />
      ))}
      {adding && (
        <FormDialog
          title="Add a webhook endpoint"
          submitLabel="Add endpoint"
          onClose={() => setAdding(false)}
          onSubmit={async (form) => {
            const url = (form.elements.namedItem('url') as HTMLInputElement).value.trim();
            const events = lines((form.elements.namedItem('events') as HTMLInputElement).value);
            const created = await api<Webhook & { secret: string }>('POST', '/webhooks', {
              url,
              events: events.length === 0 ? ['*'] : events,
            });
            setAdding(false);
            setSecret(created.secret);
            await reload();
          }}
        >
          <label class="field">
            <span>URL</span>
            <input name="url" type="url" required placeholder="https://hooks.example.com/tokenproxy" />
          </label>
          <div class="field">
            <label>
              <span>Events</span>
              <input name="events" placeholder="All events" />
            </label>
            <small>Comma-separated event types, e.g. token.revoked, breach.detected. Empty for all.</small>
          </div>
        </FormDialog>
      )}
      {remove !== null && (
        <ConfirmDialog
          title="Delete this endpoint?"
          confirmLabel="Delete endpoint"
          onClose={() => setRemove(null)}
          onConfirm={async () => {
            await api('DELETE', `/webhooks/${encodeURIComponent(remove.webhook_id)}`);
            await reload();
          }}
        >
          <p>
            Deliveries to <code class="wrap">{remove.url}</code> stop, including pending ones.
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** The last attempt in a few words: `503 · 120 ms`, `timeout · 15000 ms`. */
function lastAttempt(d: Delivery): string {
  const a = d.attempt_log.at(-1);
  if (a === undefined) return '—';
  return `${a.status_code ?? a.error_class ?? '?'} · ${a.duration_ms} ms`;
}

function WebhookCard(props: { webhook: Webhook; onDelete: () => void; onChanged: () => Promise<void> }) {
  const w = props.webhook;
  const id = encodeURIComponent(w.webhook_id);
  const deliveries = useLoad(() => api<List<Delivery>>('GET', `/webhooks/${id}/deliveries?limit=10`));
  const [note, setNote] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const health = w.disabled_at !== null ? 'disabled' : w.failing_since !== null ? 'failing' : 'healthy';
  /** Runs an action, says what happened, and shows the queued delivery once the worker has had a moment. */
  const act = async (run: () => Promise<string>) => {
    setFailure(null);
    try {
      setNote(await run());
      await props.onChanged();
      await deliveries.reload();
      setTimeout(() => void deliveries.reload(), 1500);
    } catch (err) {
      setNote(null);
      setFailure(errorText(err));
    }
  };
  const sendTest = () =>
    act(async () => {
      await api('POST', `/webhooks/${id}/test`);
      return 'Test event queued: it appears below as a "ping" delivery.';
    });
  const reEnable = () =>
    act(async () => {
      await api('PATCH', `/webhooks/${id}`, { enabled: true });
      return 'Endpoint enabled: new events are delivered to it again.';
    });
  const redeliver = (d: Delivery) =>
    act(async () => {
      await api('POST', `/events/${encodeURIComponent(d.event_id)}/redeliver?webhook_id=${id}`);
      return `Event ${d.event_type} queued again for this endpoint.`;
    });
  return (
    <article class="card" aria-label={`Endpoint ${w.url}`}>
      <div class="card-head">
        <div>
          <h2 class="url">
            <code class="wrap">{w.url}</code>
          </h2>
          <p class="muted">
            {w.events.includes('*') ? 'All events' : w.events.join(', ')} · added {dateTime(w.created_at)}
          </p>
        </div>
        <div class="card-actions">
          <span class={`badge badge-${health === 'healthy' ? 'active' : 'revoked'}`}>{health}</span>
          {w.disabled_at !== null ? (
            <button
              type="button"
              class="button small"
              aria-label={`Re-enable ${w.url}`}
              onClick={() => void reEnable()}
            >
              Re-enable
            </button>
          ) : (
            <button
              type="button"
              class="button small"
              aria-label={`Send a test event to ${w.url}`}
              onClick={() => void sendTest()}
            >
              Send test
            </button>
          )}
          <button
            type="button"
            class="button small danger-outline"
            aria-label={`Delete ${w.url}`}
            onClick={props.onDelete}
          >
            Delete
          </button>
        </div>
      </div>
      {w.disabled_reason !== null && <Alert>{w.disabled_reason}</Alert>}
      {failure !== null && <Alert>{failure}</Alert>}
      {note !== null && (
        <p class="muted" role="status">
          {note}
        </p>
      )}
      <h3>Recent deliveries</h3>
      {deliveries.error !== null && <Alert>{deliveries.error}</Alert>}
      {deliveries.data !== undefined && deliveries.data.data.length === 0 ? (
        <Empty>No deliveries yet.</Empty>
      ) : (
        <div class="table-wrap">
          <table class="table compact" aria-label={`Deliveries to ${w.url}`}>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Created</th>
                <th scope="col">Outcome</th>
                <th scope="col" class="num">
                  Attempts
                </th>
                <th scope="col">Last attempt</th>
                <th scope="col">Last error</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {(deliveries.data?.data ?? []).map((d) => (
                <tr key={d.delivery_id}>
                  <td data-label="Event">
                    <code>{d.event_type}</code>
                  </td>
                  <td data-label="Created">{dateTime(d.created_at)}</td>
                  <td data-label="Outcome">
                    <span
                      class={`badge ${d.status === 'delivered' ? 'badge-active' : d.status === 'failed' ? 'badge-revoked' : 'badge-expired'}`}
                    >
                      {d.status}
                    </span>
                  </td>
                  <td class="num" data-label="Attempts">
                    {d.attempts}
                  </td>
                  <td data-label="Last attempt">{lastAttempt(d)}</td>
                  <td data-label="Last error">{d.last_error ?? '—'}</td>
                  <td data-label="Actions">
                    {d.status !== 'pending' && w.disabled_at === null && (
                      <button
                        type="button"
                        class="button small"
                        aria-label={`Redeliver ${d.event_type} ${d.event_id}`}
                        onClick={() => void redeliver(d)}
                      >
                        Redeliver
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </article>
  );
}
