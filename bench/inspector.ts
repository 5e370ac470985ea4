import { WebSocket } from 'undici';

/**
 * A minimal client of a process's inspector (`--inspect` on loopback), for the bench's diagnostics
 * (`bench:throws`, `bench:alloc`): `call` answers with the method's result or rejects with its
 * error; `on` hears the events the process sends (`Debugger.paused`, …).
 */
export interface Inspector {
  call(method: string, params?: object): Promise<unknown>;
  on(method: string, listener: (params: unknown) => void): void;
  close(): void;
}

export async function connectInspector(port: number): Promise<Inspector> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const url = targets[0]?.webSocketDebuggerUrl;
  if (url === undefined) throw new Error(`no inspector target on port ${port}`);
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve);
    ws.addEventListener('error', reject);
  });
  let id = 1;
  const pending = new Map<number, { resolve: (result: unknown) => void; reject: (err: Error) => void }>();
  const listeners = new Map<string, (params: unknown) => void>();
  ws.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as {
      id?: number;
      method?: string;
      params?: unknown;
      result?: unknown;
      error?: { message: string };
    };
    if (message.id === undefined) {
      if (message.method !== undefined) listeners.get(message.method)?.(message.params);
      return;
    }
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (message.error !== undefined) waiting?.reject(new Error(`inspector: ${message.error.message}`));
    else waiting?.resolve(message.result);
  });
  return {
    call: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const callId = id++;
        pending.set(callId, { resolve, reject });
        ws.send(JSON.stringify({ id: callId, method, params }));
      }),
    on: (method, listener) => void listeners.set(method, listener),
    close: () => ws.close(),
  };
}
