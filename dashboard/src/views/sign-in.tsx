import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { Alert, errorText } from '../ui';

/**
 * The API key goes from this form to POST /v1/session once and is then dropped: it is never written
 * to storage, a URL or a readable cookie. The session lives in an HttpOnly cookie.
 */
export function SignIn(props: { onSignedIn: () => Promise<void> }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <div class="signin">
      <form
        class="signin-card"
        autoComplete="off"
        onSubmit={async (event) => {
          event.preventDefault();
          const form = event.currentTarget;
          const input = form.elements.namedItem('api_key') as HTMLInputElement;
          setBusy(true);
          setError(null);
          try {
            await api('POST', '/session', { api_key: input.value.trim() });
            input.value = '';
            await props.onSignedIn();
          } catch (err) {
            input.value = '';
            setError(
              err instanceof ApiError && err.code === 'invalid_api_key'
                ? 'That API key is not valid. Check for a truncated copy.'
                : errorText(err),
            );
          } finally {
            setBusy(false);
          }
        }}
      >
        <div class="brand large">
          <span class="brand-mark" aria-hidden="true" />
          tokenproxy
        </div>
        <h1>Sign in to the dashboard</h1>
        <p class="muted">
          Use your account API key (<code>svc_sk_…</code>). It is sent once to open a session and is not kept
          in this browser.
        </p>
        <label class="field">
          <span>API key</span>
          <input
            name="api_key"
            type="password"
            required
            autoComplete="off"
            spellcheck={false}
            placeholder="svc_sk_…"
          />
        </label>
        {error !== null && <Alert>{error}</Alert>}
        <button type="submit" class="button primary block" disabled={busy}>
          Sign in
        </button>
        <p class="fineprint">Sessions end after 12 hours idle or 7 days, and when you sign out.</p>
      </form>
    </div>
  );
}
