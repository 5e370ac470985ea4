import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  return 'Something went wrong. Reload the page and try again.';
}

/** Loads data on mount and on `reload()`; keeps the last data while reloading. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(async () => {
    try {
      setData(await loader.current());
      setError(null);
    } catch (err) {
      setError(errorText(err));
    }
  }, []);
  useEffect(() => {
    void reload();
  }, deps);
  return { data, error, reload, setData };
}

export function PageHeader(props: { title: string; children?: ComponentChildren; lead?: string }) {
  return (
    <header class="page-header">
      <div>
        <h1>{props.title}</h1>
        {props.lead !== undefined && <p class="lead">{props.lead}</p>}
      </div>
      {props.children !== undefined && <div class="page-actions">{props.children}</div>}
    </header>
  );
}

export function Alert(props: { kind?: 'error' | 'success' | 'info'; children: ComponentChildren }) {
  const kind = props.kind ?? 'error';
  return (
    <div class={`alert alert-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </div>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

export function StatusBadge(props: { status: string }) {
  return <span class={`badge badge-${props.status}`}>{props.status}</span>;
}

/**
 * A modal confirmation on the native <dialog> (focus trap, Escape, role "dialog" for free).
 * `confirmText`: the user must type it (the account name for the kill switch).
 */
export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  confirmText?: string;
  danger?: boolean;
  onConfirm: () => Promise<void>;
  onClose: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  const ready = props.confirmText === undefined || typed === props.confirmText;
  return (
    <dialog ref={ref} class="dialog" aria-labelledby="dialog-title" onClose={props.onClose}>
      <form
        method="dialog"
        onSubmit={async (event) => {
          event.preventDefault();
          if (!ready) return;
          setBusy(true);
          try {
            await props.onConfirm();
            ref.current?.close();
          } catch (err) {
            setError(errorText(err));
            setBusy(false);
          }
        }}
      >
        <h2 id="dialog-title">{props.title}</h2>
        <div class="dialog-body">{props.children}</div>
        {props.confirmText !== undefined && (
          <label class="field">
            <span>Type {props.confirmText} to confirm</span>
            <input
              value={typed}
              autoComplete="off"
              spellcheck={false}
              onInput={(e) => setTyped(e.currentTarget.value)}
            />
          </label>
        )}
        {error !== null && <Alert>{error}</Alert>}
        <div class="dialog-actions">
          <button type="button" class="button" onClick={() => ref.current?.close()}>
            Cancel
          </button>
          <button
            type="submit"
            class={props.danger === false ? 'button primary' : 'button danger'}
            disabled={!ready || busy}
          >
            {props.confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}

/** A modal form (create token, edit token, add webhook, rotate key). */
export function FormDialog(props: {
  title: string;
  submitLabel: string;
  children: ComponentChildren;
  onSubmit: (form: HTMLFormElement) => Promise<void>;
  onClose: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog ref={ref} class="dialog wide" aria-labelledby="form-dialog-title" onClose={props.onClose}>
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          setError(null);
          try {
            await props.onSubmit(event.currentTarget);
          } catch (err) {
            setError(errorText(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <h2 id="form-dialog-title">{props.title}</h2>
        <div class="dialog-body">{props.children}</div>
        {error !== null && <Alert>{error}</Alert>}
        <div class="dialog-actions">
          <button type="button" class="button" onClick={() => ref.current?.close()}>
            Cancel
          </button>
          <button type="submit" class="button primary" disabled={busy}>
            {props.submitLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}

/**
 * The pages of a newest-first list read so far (each a cursor), for one set of filters (`filters`,
 * any string that names them): another set, chosen in the view or by Back, starts on its first page
 * at once, without a request carrying the old set's cursor. `pager(list)` is the Pager's props.
 */
export function useCursorPages(filters: string) {
  const [paging, setPaging] = useState<{ filters: string; cursors: (string | undefined)[] }>({
    filters,
    cursors: [undefined],
  });
  const cursors = paging.filters === filters ? paging.cursors : [undefined];
  return {
    cursor: cursors[cursors.length - 1],
    pager: (list: { has_more: boolean; next_cursor: string | null } | undefined) => ({
      page: cursors.length - 1,
      hasMore: list?.has_more ?? false,
      onFirst: () => setPaging({ filters, cursors: [undefined] }),
      onNext: () => {
        const next = list?.next_cursor;
        if (next) setPaging({ filters, cursors: [...cursors, next] });
      },
    }),
  };
}

export function Pager(props: { hasMore: boolean; page: number; onNext: () => void; onFirst: () => void }) {
  if (!props.hasMore && props.page === 0) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="button" disabled={props.page === 0} onClick={props.onFirst}>
        Newest
      </button>
      <span>Page {props.page + 1}</span>
      <button type="button" class="button" disabled={!props.hasMore} onClick={props.onNext}>
        Older
      </button>
    </nav>
  );
}

/** A token filter's options: the account's tokens by name (the views' one list of them). */
export function TokenOptions(props: { tokens: readonly { token_id: string; name: string }[] }) {
  return (
    <>
      {props.tokens.map((t) => (
        <option key={t.token_id} value={t.token_id}>
          {t.name}
        </option>
      ))}
    </>
  );
}
