import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases } from '../support/databases.js';
import { MOCK_KEY_ENCODINGS } from '../support/mock-provider.js';
import { bearer, startProxyHarness, type ProxyHarness } from './harness.js';

/** Characters that base64, URL and JSON encodings all treat specially. */
const REAL_KEY = 'sk-proj/Ab+c_d-9xYz~Q.k==redaction/e2e?key';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(
    `redaction of the key's encodings, end to end (${fixture.name})`,
    () => {
      let h: ProxyHarness;
      let token: string;

      beforeAll(async () => {
        h = await startProxyHarness(fixture);
        ({ token } = await h.createToken({ realKey: REAL_KEY }));
      });
      afterAll(async () => {
        await h?.close();
      });

      for (const sse of [false, true]) {
        it(`a key echoed where the model name goes${sse ? ' (SSE, 3 bytes per chunk)' : ''} is not recorded as the model`, async () => {
          const res = await h.send(`/openai/echo-key-as-model${sse ? '?sse=1' : ''}`, {
            headers: bearer(token),
          });
          expect(res.status).toBe(200);
          expect(res.text).toContain('[REDACTED]');
          expect(res.text).not.toContain(REAL_KEY);
          const record = await h.recordOf(res.headers['x-tokenproxy-request-id']);
          expect(record.model).not.toContain(REAL_KEY);
          expect(record.model).toBe('[REDACTED]');
          // The rest of the answer is still read: its usage is counted.
          expect([record.inputTokens, record.outputTokens]).toEqual([7, 3]);
          const logs = await h.apiCall('GET', '/v1/logs');
          expect(logs.status).toBe(200);
          expect(JSON.stringify(logs.body)).not.toContain(REAL_KEY);
        });
      }

      for (const [name, encode] of Object.entries(MOCK_KEY_ENCODINGS)) {
        for (const sse of [false, true]) {
          it(`${name}${sse ? ' (SSE, 3 bytes per chunk)' : ''}: header and body redacted`, async () => {
            const res = await h.send(`/openai/echo-key-encoded?as=${name}${sse ? '&sse=1' : ''}`, {
              headers: bearer(token),
            });
            expect(res.status).toBe(200);
            // What the provider sent, encoded: it holds the key, and the answer must not.
            const echoed = encode(`{"debug":{"api_key":"${REAL_KEY}","n":1}}`);
            const header = String(res.headers['x-echo-encoded']);
            for (const out of [header, res.text]) {
              expect(out).toContain('[REDACTED]');
              expect(out).not.toContain(echoed);
              expect(out).not.toContain(REAL_KEY);
            }
            // Only the key's part of the dump is replaced: what is around it arrives unchanged.
            const start = echoed.slice(0, 6);
            expect(res.text).toContain(start);
            expect(header.startsWith(start)).toBe(true);
          });
        }
      }
    },
  );
}
