import 'uplot/dist/uPlot.min.css';
// In cascade order: the base (variables, reset) first, the narrow screens' overrides last.
import './styles/base.css';
import './styles/shell.css';
import './styles/page.css';
import './styles/tables.css';
import './styles/controls.css';
import './styles/sign-in.css';
import './styles/responsive.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, whenSignedOut, type Account } from './api';
import { Alert, errorText } from './ui';
import { navigate, useLocation, VIEWS } from './router';
import { SignIn } from './views/sign-in';
import { Overview } from './views/overview';
import { Tokens } from './views/tokens';
import { Anomalies } from './views/anomalies';
import { Logs } from './views/logs';
import { Keys } from './views/keys';
import { Webhooks } from './views/webhooks';
import { Settings } from './views/settings';

type State = { kind: 'loading' } | { kind: 'signed-out' } | { kind: 'signed-in'; account: Account };

function App() {
  const [state, setState] = useState<State>({ kind: 'loading' });
  const signedIn = async () =>
    setState({ kind: 'signed-in', account: await api<Account>('GET', '/account') });

  useEffect(() => {
    whenSignedOut(() => setState({ kind: 'signed-out' }));
    signedIn().catch(() => setState({ kind: 'signed-out' }));
  }, []);

  if (state.kind === 'loading') return <div class="boot" aria-busy="true" />;
  if (state.kind === 'signed-out') return <SignIn onSignedIn={signedIn} />;
  return (
    <Shell
      account={state.account}
      onAccount={(account) => setState({ kind: 'signed-in', account })}
      onSignedOut={() => setState({ kind: 'signed-out' })}
    />
  );
}

function Shell(props: { account: Account; onAccount: (a: Account) => void; onSignedOut: () => void }) {
  const { path, params } = useLocation();
  const view = VIEWS.find((v) => v.path === path) ?? VIEWS[0];
  const [signOutError, setSignOutError] = useState<string | null>(null);
  // Each click in the navigation opens its view afresh (lists read again, filters cleared), also when
  // it is the view already shown: that click is how a user asks for what is new.
  const [visit, setVisit] = useState(0);
  const open = (to: string) => {
    navigate(to);
    setVisit((n) => n + 1);
  };
  useEffect(() => {
    document.title = `${view.name} · tokenproxy`;
  }, [view.name]);

  return (
    <div class="shell">
      <header class="topbar">
        <a
          class="brand"
          href="/"
          onClick={(e) => {
            e.preventDefault();
            open('/');
          }}
        >
          <span class="brand-mark" aria-hidden="true" />
          tokenproxy
        </a>
        <div class="account">
          <span class="account-name" title="Account">
            {props.account.name}
          </span>
          <span class="plan">{props.account.plan}</span>
          <button
            type="button"
            class="button ghost"
            onClick={async () => {
              try {
                await api('DELETE', '/session');
              } catch (err) {
                // Unanswered, the session stays open on the server: saying "signed out" would leave it
                // to the next person at this browser. A session already gone (401) is signed out.
                if (!(err instanceof ApiError && err.status === 401)) {
                  setSignOutError(`Not signed out: ${errorText(err)} Try again.`);
                  return;
                }
              }
              props.onSignedOut();
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      {signOutError !== null && (
        <div class="shell-alert">
          <Alert>{signOutError}</Alert>
        </div>
      )}
      <nav class="nav" aria-label="Dashboard">
        <ul>
          {VIEWS.map((v) => (
            <li key={v.path}>
              <a
                href={v.path}
                aria-current={v.path === view.path ? 'page' : undefined}
                onClick={(e) => {
                  e.preventDefault();
                  open(v.path);
                }}
              >
                {v.name}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main class="main" key={visit}>
        {view.path === '/' && <Overview account={props.account} />}
        {view.path === '/tokens' && <Tokens account={props.account} />}
        {view.path === '/anomalies' && <Anomalies tokenId={params.get('token_id') ?? undefined} />}
        {view.path === '/logs' && <Logs params={params} />}
        {view.path === '/keys' && <Keys />}
        {view.path === '/webhooks' && <Webhooks />}
        {view.path === '/settings' && <Settings account={props.account} onAccount={props.onAccount} />}
      </main>
    </div>
  );
}

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
