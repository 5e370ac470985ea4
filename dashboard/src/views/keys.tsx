import { useState } from 'preact/hooks';
import { api, listAll, type Key } from '../api';
import { dateTime, when } from '../format';
import { Alert, ConfirmDialog, Empty, FormDialog, PageHeader, useLoad } from '../ui';

export function Keys() {
  const { data, error, reload } = useLoad(() => listAll<Key>('/keys'));
  const [rotate, setRotate] = useState<Key | null>(null);
  const [remove, setRemove] = useState<Key | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const keys = data?.items ?? [];
  return (
    <section>
      <PageHeader
        title="Keys"
        lead="Your providers' real keys, encrypted at rest. Only the last 4 characters are ever shown."
      />
      {error !== null && <Alert>{error}</Alert>}
      {notice !== null && <Alert kind="success">{notice}</Alert>}
      <div class="card flush">
        {data !== undefined && keys.length === 0 ? (
          <Empty>No keys yet. A key is stored when you create a token with a real key.</Empty>
        ) : (
          <div class="table-wrap">
            <table class="table" aria-label="Keys">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Provider</th>
                  <th scope="col">Key</th>
                  <th scope="col">Created</th>
                  <th scope="col">Rotated</th>
                  <th scope="col" class="num">
                    Active tokens
                  </th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.map((k) => (
                  <tr key={k.key_id}>
                    <td class="strong" data-label="Name">
                      {k.name}
                    </td>
                    <td data-label="Provider">{k.provider}</td>
                    <td data-label="Key">
                      <code>{k.hint === '' ? '••••' : `••••${k.hint}`}</code>
                    </td>
                    <td data-label="Created">{dateTime(k.created_at)}</td>
                    <td data-label="Rotated">{when(k.rotated_at)}</td>
                    <td class="num" data-label="Active tokens">
                      {k.token_count}
                    </td>
                    <td class="actions">
                      {k.deleted_at === null ? (
                        <>
                          <button
                            type="button"
                            class="button small"
                            aria-label={`Rotate ${k.name}`}
                            onClick={() => setRotate(k)}
                          >
                            Rotate
                          </button>
                          <button
                            type="button"
                            class="button small danger-outline"
                            aria-label={`Delete ${k.name}`}
                            onClick={() => setRemove(k)}
                          >
                            Delete
                          </button>
                        </>
                      ) : (
                        <span class="badge badge-revoked">deleted</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
      {rotate !== null && (
        <FormDialog
          title={`Rotate ${rotate.name}`}
          submitLabel="Rotate key"
          onClose={() => setRotate(null)}
          onSubmit={async (form) => {
            const input = form.elements.namedItem('real_key') as HTMLInputElement;
            await api('POST', `/keys/${encodeURIComponent(rotate.key_id)}/rotate`, {
              real_key: input.value.trim(),
            });
            input.value = '';
            setRotate(null);
            setNotice(`Rotated ${rotate.name}. Its tokens keep working with the new key.`);
            await reload();
          }}
        >
          <div class="field">
            <label>
              <span>New real key</span>
              <input name="real_key" type="password" required autoComplete="off" spellcheck={false} />
            </label>
            <small>Tokens using this key keep working and use the new key from their next request.</small>
          </div>
        </FormDialog>
      )}
      {remove !== null && (
        <ConfirmDialog
          title="Delete this key?"
          confirmLabel="Delete key"
          onClose={() => setRemove(null)}
          onConfirm={async () => {
            await api('DELETE', `/keys/${encodeURIComponent(remove.key_id)}`);
            setNotice(`Deleted ${remove.name}.`);
            await reload();
          }}
        >
          <p>
            The encrypted key <strong>{remove.name}</strong> is destroyed and its {remove.token_count} active
            token
            {remove.token_count === 1 ? ' is' : 's are'} revoked. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}
