import { useEffect, useState } from 'preact/hooks';

/** Path-based views (each view has its own address, so the breach e-mail can link to one). */
export const VIEWS = [
  { path: '/', name: 'Overview' },
  { path: '/tokens', name: 'Tokens' },
  { path: '/anomalies', name: 'Anomalies' },
  { path: '/logs', name: 'Logs' },
  { path: '/keys', name: 'Keys' },
  { path: '/webhooks', name: 'Webhooks' },
  { path: '/settings', name: 'Settings' },
] as const;

const listeners = new Set<() => void>();

export function navigate(url: string): void {
  history.pushState(null, '', url);
  for (const listener of listeners) listener();
}

export function useLocation(): { path: string; params: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((n) => n + 1);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return { path: location.pathname, params: new URLSearchParams(location.search) };
}
