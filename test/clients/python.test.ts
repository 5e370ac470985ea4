import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startClientTestServer,
  startCountingProxy,
  startDroppingProxy,
  type ClientTestServer,
  type DroppingProxy,
} from './support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let t: ClientTestServer;
let proxy: DroppingProxy;
let counting: DroppingProxy;

beforeAll(async () => {
  t = await startClientTestServer();
  proxy = await startDroppingProxy(t);
  counting = await startCountingProxy(t);
});
afterAll(async () => {
  await proxy.close();
  await counting.close();
  await t.stop();
});

function run(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-m', 'unittest', 'discover', '-s', 'clients/python/tests', '-v'], {
      cwd: ROOT,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...env },
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`python tests did not finish\n${output}`));
    }, 170_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('Python client library (tokenproxy) against a real server', () => {
  it('passes its unittest suite', { timeout: 180_000 }, async () => {
    // The fourth account is the kill-switch test's own: revoke_all must not touch the others' tokens.
    // The fifth is the connection-reuse tests' (test_server_connections.py), whose tokens must not
    // show in the others' lists.
    const apiKeys: string[] = [];
    for (let i = 0; i < 5; i++) apiKeys.push(await t.newAccount());
    const { code, output } = await run({
      TOKENPROXY_TEST_BASE_URL: t.baseUrl,
      TOKENPROXY_TEST_CA_FILE: t.caFile,
      TOKENPROXY_TEST_API_KEYS: apiKeys.join(','),
      TOKENPROXY_TEST_FREE_API_KEY: t.freeApiKey,
      TOKENPROXY_TEST_DROP_URL: proxy.baseUrl,
      TOKENPROXY_TEST_COUNT_URL: counting.baseUrl,
    });
    expect(code, output).toBe(0);
    const ran = Number(/^Ran (\d+) tests? in/m.exec(output)?.[1] ?? 0);
    expect(ran, output).toBeGreaterThan(0);
    // The server-backed tests really ran: none was skipped, for want of a server or any other reason
    // (unittest exits 0 on skips, and -v prints "skipped" for each).
    expect(output).not.toContain('no server');
    expect(output).not.toMatch(/skipped/i);
    expect(output).toMatch(/test_retry_after_dropped_connection_creates_one_token .* \.\.\. ok/);
    expect(proxy.connections()).toBe(2);
    // The untrusted certificate was not retried: one refused connection, one trusted call.
    expect(output).toMatch(/test_untrusted_certificate_says_how_to_trust_it_and_is_not_retried .* \.\.\. ok/);
    expect(counting.connections()).toBe(2);
  });
});
