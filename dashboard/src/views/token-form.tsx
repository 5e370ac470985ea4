import { useState } from 'preact/hooks';
import { api, listAll, type Key, type Provider, type Token } from '../api';
import { lines } from '../format';
import { FormDialog, useLoad } from '../ui';

function value(form: HTMLFormElement, name: string): string {
  return ((form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null)?.value ?? '').trim();
}

/**
 * The fields both create and edit share: hosts, IPs, rate limit, expiry. An edit sends the expiry
 * only when it was changed: the field holds minutes, so sending it back unchanged would cut the
 * stored seconds, and an ended token's expiry cannot change at all (409 `token_not_active`).
 */
function limitsBody(form: HTMLFormElement, editing: Token | undefined) {
  const requests = value(form, 'rate_requests');
  const window = value(form, 'rate_window');
  const expires = value(form, 'expires_at');
  const rateLimit =
    requests === '' ? null : { requests: Number(requests), window: window === '' ? '1m' : window };
  const expiresAt = expires === '' ? null : new Date(expires).toISOString();
  const expiryChanged =
    editing === undefined ? expiresAt !== null : expires !== localInput(editing.expires_at);
  return {
    allowed_hosts: lines(value(form, 'allowed_hosts')),
    allowed_ips: lines(value(form, 'allowed_ips')),
    ...(rateLimit !== null || editing !== undefined ? { rate_limit: rateLimit } : {}),
    ...(expiryChanged ? { expires_at: expiresAt } : {}),
  };
}

function localInput(iso: string | null): string {
  if (iso === null) return '';
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function LimitFields(props: { token?: Token }) {
  const t = props.token;
  const ended = t !== undefined && t.status !== 'active';
  return (
    <>
      <div class="field">
        <label>
          <span>Allowed hosts</span>
          <textarea name="allowed_hosts" rows={2} required placeholder="app.example.com, *.example.com">
            {t?.authorized_origins.join('\n') ?? ''}
          </textarea>
        </label>
        <small>One per line: host names, *.wildcards or full origins. Only these may use the token.</small>
      </div>
      <div class="field">
        <label>
          <span>Allowed IPs</span>
          <textarea name="allowed_ips" rows={2} placeholder="Any IP">
            {t?.authorized_ips.join('\n') ?? ''}
          </textarea>
        </label>
        <small>Optional. IPs or CIDR ranges, one per line.</small>
      </div>
      <div class="field-row">
        <label class="field">
          <span>Rate limit (requests)</span>
          <input
            name="rate_requests"
            type="number"
            min={1}
            placeholder="No limit"
            value={t?.rate_limit?.requests ?? ''}
          />
        </label>
        <label class="field">
          <span>Per window</span>
          <input name="rate_window" placeholder="1m" value={t?.rate_limit?.window ?? ''} />
        </label>
      </div>
      <div class="field">
        <label>
          <span>Expires</span>
          <input
            name="expires_at"
            type="datetime-local"
            value={localInput(t?.expires_at ?? null)}
            disabled={ended}
          />
        </label>
        <small>
          {ended
            ? `This token is ${t.status}: an ended token stays ended. Create a new token instead.`
            : 'Optional. Leave empty for a token that does not expire.'}
        </small>
      </div>
    </>
  );
}

export function CreateTokenDialog(props: {
  onCreated: (token: Token & { sanitized_key: string }) => void;
  onClose: () => void;
}) {
  const { data } = useLoad(async () => {
    const [providers, keys] = await Promise.all([
      api<{ data: Provider[] }>('GET', '/providers'),
      listAll<Key>('/keys'),
    ]);
    return { providers: providers.data, keys: keys.items.filter((k) => k.deleted_at === null) };
  });
  const [provider, setProvider] = useState('openai');
  const [keyId, setKeyId] = useState('');
  const keys = (data?.keys ?? []).filter((k) => k.provider === provider);
  return (
    <FormDialog
      title="Create a token"
      submitLabel="Create token"
      onClose={props.onClose}
      onSubmit={async (form) => {
        const body = {
          name: value(form, 'name'),
          provider,
          ...(keyId === '' ? { real_key: value(form, 'real_key') } : { key_id: keyId }),
          ...limitsBody(form, undefined),
        };
        props.onCreated(await api<Token & { sanitized_key: string }>('POST', '/tokens', body));
      }}
    >
      <label class="field">
        <span>Name</span>
        <input name="name" required maxLength={200} placeholder="web app, production" />
      </label>
      <div class="field-row">
        <label class="field">
          <span>Provider</span>
          <select name="provider" value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
            {(data?.providers ?? [{ id: 'openai', base_url: '' }]).map((p) => (
              <option key={p.id} value={p.id}>
                {p.id}
              </option>
            ))}
          </select>
        </label>
        <label class="field">
          <span>Stored key</span>
          <select name="key_id" value={keyId} onChange={(e) => setKeyId(e.currentTarget.value)}>
            <option value="">A new real key</option>
            {keys.map((k) => (
              <option key={k.key_id} value={k.key_id}>
                {k.name} (…{k.hint})
              </option>
            ))}
          </select>
        </label>
      </div>
      {keyId === '' && (
        <div class="field">
          <label>
            <span>Real key</span>
            <input name="real_key" type="password" required autoComplete="off" spellcheck={false} />
          </label>
          <small>Encrypted at rest and never shown again.</small>
        </div>
      )}
      <LimitFields />
    </FormDialog>
  );
}

export function EditTokenDialog(props: {
  token: Token;
  onSaved: (token: Token) => void;
  onClose: () => void;
}) {
  return (
    <FormDialog
      title={`Edit ${props.token.name}`}
      submitLabel="Save changes"
      onClose={props.onClose}
      onSubmit={async (form) => {
        const body = { name: value(form, 'name'), ...limitsBody(form, props.token) };
        props.onSaved(await api<Token>('PATCH', `/tokens/${encodeURIComponent(props.token.token_id)}`, body));
      }}
    >
      <label class="field">
        <span>Name</span>
        <input name="name" required maxLength={200} value={props.token.name} />
      </label>
      <LimitFields token={props.token} />
    </FormDialog>
  );
}
