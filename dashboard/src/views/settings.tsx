import { useState } from 'preact/hooks';
import { api, type Account } from '../api';
import { dateTime } from '../format';
import { Alert, PageHeader, errorText } from '../ui';
import { AuditLog } from './audit-log';

export function Settings(props: { account: Account; onAccount: (account: Account) => void }) {
  const [notice, setNotice] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const a = props.account;
  return (
    <section>
      <PageHeader
        title="Settings"
        lead="Your account's name, where breach alerts are e-mailed, and every change made to the account."
      />
      <form
        class="card narrow"
        onSubmit={async (event) => {
          event.preventDefault();
          const form = event.currentTarget;
          const name = (form.elements.namedItem('name') as HTMLInputElement).value.trim();
          const email = (form.elements.namedItem('alert_email') as HTMLInputElement).value.trim();
          try {
            const updated = await api<Account>('PATCH', '/account', {
              name,
              alert_email: email === '' ? null : email,
            });
            props.onAccount(updated);
            setError(null);
            setNotice('Saved.');
          } catch (err) {
            setNotice(null);
            setError(errorText(err));
          }
        }}
      >
        <label class="field">
          <span>Account name</span>
          <input name="name" required maxLength={200} value={a.name} />
        </label>
        <div class="field">
          <label>
            <span>Alert e-mail</span>
            <input
              name="alert_email"
              type="email"
              value={a.alert_email ?? ''}
              placeholder="security@example.com"
            />
          </label>
          <small>Breach alerts go here. Leave empty for no e-mail.</small>
        </div>
        {error !== null && <Alert>{error}</Alert>}
        {notice !== null && <Alert kind="success">{notice}</Alert>}
        <button type="submit" class="button primary">
          Save settings
        </button>
        <dl class="facts">
          <dt>Account id</dt>
          <dd>
            <code>{a.account_id}</code>
          </dd>
          <dt>Plan</dt>
          <dd>
            {a.plan} <small class="muted">(changed by the operator: tokenproxy accounts set-plan)</small>
          </dd>
          <dt>Created</dt>
          <dd>{dateTime(a.created_at)}</dd>
        </dl>
      </form>
      <AuditLog />
    </section>
  );
}
