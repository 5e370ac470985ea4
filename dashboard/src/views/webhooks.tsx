import { useState } from 'preact/hooks';
import { api, type Delivery, type List, type Webhook } from '../api';
import { dateTime, lines } from '../format';
import { Alert, ConfirmDialog, Empty, FormDialog, PageHeader, useLoad } from '../ui';

export function Webhooks() {
  const { data, error, reload } = useLoad(() => api<List<Webhook>>('GET', '/webhooks?limit=100'));
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const [remove, setRemove] = useState<Webhook | null>(null);
  const hooks = data?.data ?? [];
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
        <WebhookCard key={w.webhook_id} webhook={w} onDelete={() => setRemove(w)} />
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

function WebhookCard(props: { webhook: Webhook; onDelete: () => void }) {
  const w = props.webhook;
  const deliveries = useLoad(() =>
    api<List<Delivery>>('GET', `/webhooks/${encodeURIComponent(w.webhook_id)}/deliveries?limit=10`),
  );
  const health = w.disabled_at !== null ? 'disabled' : w.failing_since !== null ? 'failing' : 'healthy';
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
                <th scope="col">Last error</th>
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
                  <td data-label="Last error">{d.last_error ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </article>
  );
}
