import { useRef, useState } from 'preact/hooks';
import { api, listAll, type Account, type BudgetStatus, type List, type Token, type Usage } from '../api';
import { budgetUse, count, when } from '../format';
import { Alert, ConfirmDialog, Empty, PageHeader, StatusBadge, useLoad } from '../ui';
import { CreateTokenDialog, EditTokenDialog } from './token-form';

type Dialog =
  | { kind: 'create' }
  | { kind: 'edit'; token: Token }
  | { kind: 'revoke'; token: Token }
  | { kind: 'revoke-all' }
  | null;

export function Tokens(props: { account: Account }) {
  const { data, error, reload } = useLoad(() => listAll<Token>('/tokens'));
  // Spend against each token's budget; the list still shows when usage cannot be read.
  const { data: usage } = useLoad(() => api<Usage>('GET', '/usage?window=24h&bucket=1h').catch(() => null));
  const budgets = new Map<string, BudgetStatus>();
  for (const b of usage?.budgets ?? []) if (b.token_id !== null) budgets.set(b.token_id, b);
  const [dialog, setDialog] = useState<Dialog>(null);
  const [created, setCreated] = useState<(Token & { sanitized_key: string }) | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const tokens = data?.items ?? [];
  const active = tokens.filter((t) => t.status === 'active');
  // With a list cut short the count of active tokens would be too small: the API revokes them all.
  const activeCount = data?.complete === false ? props.account.usage.active_tokens : active.length;

  return (
    <section>
      <PageHeader
        title="Tokens"
        lead="Sanitized tokens bound to your hosts. Revoking one takes effect on its next request."
      >
        <button type="button" class="button primary" onClick={() => setDialog({ kind: 'create' })}>
          Create token
        </button>
        <button
          type="button"
          class="button danger-outline"
          disabled={activeCount === 0}
          onClick={() => setDialog({ kind: 'revoke-all' })}
        >
          Revoke all tokens
        </button>
      </PageHeader>
      {error !== null && <Alert>{error}</Alert>}
      {notice !== null && <Alert kind="success">{notice}</Alert>}
      {created !== null && <CreatedToken token={created} onDone={() => setCreated(null)} />}
      {data?.complete === false && (
        <Alert kind="info">
          Showing the newest {count(tokens.length)} tokens. Older ones are in the API (
          <code>GET /v1/tokens</code>).
        </Alert>
      )}
      <div class="card flush">
        {data !== undefined && tokens.length === 0 ? (
          <Empty>No tokens yet. Create one to hand out instead of your real key.</Empty>
        ) : (
          <div class="table-wrap">
            <table class="table" aria-label="Tokens">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Token</th>
                  <th scope="col">Provider</th>
                  <th scope="col">Allowed hosts</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last used</th>
                  <th scope="col" class="num">
                    Requests
                  </th>
                  <th scope="col">Budget</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {tokens.map((t) => (
                  <tr key={t.token_id}>
                    <td class="strong" data-label="Name">
                      {t.name}
                    </td>
                    <td data-label="Token">
                      <code class="hint">{t.sanitized_key_hint}</code>
                    </td>
                    <td data-label="Provider">{t.target_provider}</td>
                    <td data-label="Allowed hosts">
                      <ul class="chips">
                        {t.authorized_origins.map((o) => (
                          <li key={o}>{o}</li>
                        ))}
                      </ul>
                    </td>
                    <td data-label="Status">
                      <StatusBadge status={t.status} />
                    </td>
                    <td data-label="Last used">{when(t.last_used_at)}</td>
                    <td class="num" data-label="Requests">
                      {count(t.request_count)}
                    </td>
                    <td data-label="Budget" data-testid="token-budget">
                      {t.budget === null
                        ? '—'
                        : budgets.has(t.token_id)
                          ? budgetUse(budgets.get(t.token_id) as BudgetStatus)
                          : '…'}
                    </td>
                    <td class="actions">
                      <button
                        type="button"
                        class="button small"
                        onClick={() => setDialog({ kind: 'edit', token: t })}
                      >
                        Edit
                      </button>
                      {t.status === 'active' && (
                        <button
                          type="button"
                          class="button small danger-outline"
                          aria-label={`Revoke ${t.name}`}
                          onClick={() => setDialog({ kind: 'revoke', token: t })}
                        >
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>

      {dialog?.kind === 'create' && (
        <CreateTokenDialog
          onClose={() => setDialog(null)}
          onCreated={(token) => {
            setDialog(null);
            setCreated(token);
            void reload();
          }}
        />
      )}
      {dialog?.kind === 'edit' && (
        <EditTokenDialog
          token={dialog.token}
          onClose={() => setDialog(null)}
          onSaved={(token) => {
            setDialog(null);
            setNotice(`Saved ${token.name}. The change applies to its next request.`);
            void reload();
          }}
        />
      )}
      {dialog?.kind === 'revoke' && (
        <ConfirmDialog
          title="Revoke this token?"
          confirmLabel="Revoke token"
          onClose={() => setDialog(null)}
          onConfirm={async () => {
            await api('DELETE', `/tokens/${encodeURIComponent(dialog.token.token_id)}`);
            setNotice(`Revoked ${dialog.token.name}.`);
            await reload();
          }}
        >
          <p>
            <strong>{dialog.token.name}</strong> (<code>{dialog.token.sanitized_key_hint}</code>) stops
            working on its next request. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
      {dialog?.kind === 'revoke-all' && (
        <ConfirmDialog
          title="Revoke all tokens?"
          confirmLabel="Revoke all tokens"
          confirmText={props.account.name}
          onClose={() => setDialog(null)}
          onConfirm={async () => {
            const result = await api<List<Token>>('POST', '/tokens/revoke_all');
            setNotice(`Revoked ${result.data.length} token${result.data.length === 1 ? '' : 's'}.`);
            await reload();
          }}
        >
          <p>
            The kill switch: every active token of this account ({activeCount}) stops working at once. Your
            real keys stay stored; create new tokens afterwards.
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** The sanitized token, shown this once; it is dropped from memory when the user closes the panel. */
function CreatedToken(props: { token: Token & { sanitized_key: string }; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const [copyFailed, setCopyFailed] = useState(false);
  const field = useRef<HTMLInputElement>(null);
  return (
    <div class="card created" role="status">
      <h2>Token created: copy it now</h2>
      <p class="muted">This is the only time the full token is shown. Store it where your app reads it.</p>
      <div class="copy-row">
        <input
          ref={field}
          readOnly
          value={props.token.sanitized_key}
          aria-label="New sanitized token"
          spellcheck={false}
        />
        <button
          type="button"
          class="button primary"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(props.token.sanitized_key);
              setCopied(true);
            } catch {
              // No clipboard (denied, or not a secure context): select it for the user to copy.
              field.current?.select();
              setCopyFailed(true);
            }
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      {copyFailed && (
        <p class="muted" role="alert">
          The browser did not let the page copy it. The token is selected: copy it with Ctrl+C (⌘C).
        </p>
      )}
      <p class="muted">
        Base URL for your SDK: <code>{props.token.proxy_base_url}</code>
      </p>
      <button type="button" class="button" onClick={props.onDone}>
        Done
      </button>
    </div>
  );
}
