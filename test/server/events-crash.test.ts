/* eslint-disable @typescript-eslint/no-non-null-assertion --
   tests read JSON bodies of known shape; a failed assumption fails the test, which is the point */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, type ServerProcess } from '../support/cli.js';
import { startReceiver, type Receiver } from '../events/support.js';

const FLAGS = [
  '--insecure-http',
  '--allow-private-webhooks',
  '--webhook-retry-schedule',
  Array.from({ length: 30 }, () => '1s').join(','),
];

describe('the outbox survives kill -9 (the real binary)', () => {
  let dataDir: string | undefined;
  let receiver: Receiver | undefined;
  const servers: ServerProcess[] = [];

  afterAll(async () => {
    for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGKILL');
    await receiver?.close();
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  it('delivers an event enqueued before a crash after the restart, with the same webhook-id', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-crash-'));
    receiver = await startReceiver();
    receiver.script([], 500);
    const first = await startServe(['--data-dir', dataDir, ...FLAGS]);
    servers.push(first);
    const apiKey = /svc_sk_\w+/.exec(first.stderr())?.[0] ?? '';
    const call = async (server: ServerProcess, method: string, url: string, body?: unknown) => {
      const res = await fetch(`${server.apiUrl}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    const hook = await call(first, 'POST', '/v1/webhooks', { url: receiver.url, events: ['token.revoked'] });
    expect(hook.status).toBe(201);
    const token = await call(first, 'POST', '/v1/tokens', {
      name: 'crash',
      provider: 'openai',
      allowed_hosts: ['app.example.com'],
      real_key: 'sk-test-0123456789abcdefWXYZ',
    });
    expect((await call(first, 'DELETE', `/v1/tokens/${String(token.body.token_id)}`)).status).toBe(200);

    // The receiver refuses the first attempt; the event is now only in the outbox. Crash.
    const [attempt] = await receiver.waitFor(1);
    await new Promise((r) => setTimeout(r, 200));
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;
    const before = receiver.requests.length;
    receiver.script([], 200);

    const second = await startServe(['--data-dir', dataDir, ...FLAGS]);
    servers.push(second);
    const all = await receiver.waitFor(before + 1, 20_000);
    const delivered = all[before]!;
    expect(delivered.headers['webhook-id']).toBe(attempt!.headers['webhook-id']);
    const payload = new Webhook(String(hook.body.secret)).verify(delivered.body, {
      'webhook-id': String(delivered.headers['webhook-id']),
      'webhook-timestamp': String(delivered.headers['webhook-timestamp']),
      'webhook-signature': String(delivered.headers['webhook-signature']),
    }) as { type: string; data: { token_id: string } };
    expect(payload.type).toBe('token.revoked');
    expect(payload.data.token_id).toBe(token.body.token_id);
    expect(await second.stop()).toBe(0);
    // No secret reached the log.
    const output = first.stdout() + second.stdout();
    expect(output).not.toContain(String(hook.body.secret).slice(6));
    expect(output).not.toContain('sk-test-0123456789abcdefWXYZ');
  });
});
