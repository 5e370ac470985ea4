// The provider stand-in of scripts/make-upgrade-fixture.js: answers every path like an OpenAI chat
// completion (with usage), and 200 on /webhook for the old server's webhook deliveries. Records the
// credential each request carried, so the fixture's manifest shows the old build sent the real key.
import { once } from 'node:events';
import { createServer } from 'node:https';
import { createTestCa } from '../test/support/test-ca.ts';

export async function startFixtureMock(port) {
  const ca = await createTestCa('upgrade fixture mock provider CA');
  const leaf = await ca.issue(['localhost', '127.0.0.1']);
  const received = [];
  const mock = createServer({ cert: leaf.certPem, key: leaf.keyPem });
  mock.on('request', (req, res) => {
    req.resume();
    req.on('end', () => {
      received.push({ path: req.url, authorization: req.headers.authorization ?? null });
      res.setHeader('content-type', 'application/json');
      if (req.url.startsWith('/webhook')) return res.end('{}');
      res.end(
        JSON.stringify({
          id: 'chatcmpl-upgrade',
          object: 'chat.completion',
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
        }),
      );
    });
  });
  mock.listen(port, '127.0.0.1');
  await once(mock, 'listening');
  return { mock, received, caCertPem: ca.caCertPem, mockUrl: `https://127.0.0.1:${port}` };
}
