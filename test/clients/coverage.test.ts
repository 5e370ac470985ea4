import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANS } from '../../src/accounts/plans.js';
import { buildApiApp } from '../../src/api/app.js';
import type { ApiServer } from '../../src/api/context.js';
import { createLogger } from '../../src/observability/logger.js';
import { ProviderRegistry } from '../../src/providers/providers.js';
import { createLocalVault } from '../../src/vault/local-kek.js';
import { ROUTES, TokenProxy, type FetchLike } from '../../clients/node/src/index.js';
import { databases, type OpenedDatabase } from '../support/databases.js';

/**
 * Every library method maps 1:1 to a REST endpoint (specification §1 rule 8): the (method, path)
 * pairs of the OpenAPI document, the route table of each library and what each library method
 * really calls must be the same set, with no endpoint twice.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
type Pair = string; // "GET /tokens/:id"

let app: ApiServer;
let db: OpenedDatabase;
let endpoints: Pair[];

beforeAll(async () => {
  const sqlite = databases.find((d) => d.name === 'sqlite');
  if (!sqlite) throw new Error('no sqlite fixture');
  db = await sqlite.create();
  app = await buildApiApp(
    {
      store: db.store,
      vault: createLocalVault(randomBytes(32)),
      providers: new ProviderRegistry([]),
      publicProxyUrl: 'https://proxy.test',
      plans: PLANS,
      now: () => new Date(),
    },
    { logger: createLogger('silent', { write: () => undefined }), version: 'test' },
  );
  await app.ready();
  const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
  const doc = JSON.parse(res.body) as { paths: Record<string, Record<string, unknown>> };
  endpoints = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    // Paths are relative to the document's server `/v1`; hidden routes (health) are not in it.
    const relative = path.replace(/^\/v1(?=\/)/, '').replace(/\{(\w+)\}/g, ':$1');
    for (const method of Object.keys(ops)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      endpoints.push(`${method.toUpperCase()} ${relative}`);
    }
  }
});
afterAll(async () => {
  await app.close();
  await db.cleanup();
});

function expectOneToOne(table: Record<string, Pair>): void {
  const pairs = Object.values(table);
  // No endpoint served by two methods…
  expect(new Set(pairs).size, JSON.stringify(table)).toBe(pairs.length);
  // …and the same set of endpoints as the server: a route without a method fails here.
  expect([...pairs].sort()).toEqual([...endpoints].sort());
}

/** Arguments for any method: an id when its path has one, then an (empty) params object. */
const argsFor = (pair: Pair): unknown[] => (pair.includes(':id') ? ['x_id', {}] : [{}]);

describe('client libraries cover the REST API 1:1', () => {
  it('the OpenAPI document lists the management endpoints', () => {
    expect(endpoints).toContain('POST /tokens');
    expect(endpoints).toContain('DELETE /tokens/:id');
  });

  it('Node.js: the route table matches the OpenAPI document, and every method calls its own route', async () => {
    const table = Object.fromEntries(Object.entries(ROUTES).map(([k, r]) => [k, `${r.method} ${r.path}`]));
    expectOneToOne(table);

    let last: Pair | undefined;
    const fetch: FetchLike = (url, init) => {
      last = `${init.method} ${new URL(url).pathname.replace(/^\/v1/, '').replace('x_id', ':id')}`;
      const list = { object: 'list', data: [], has_more: false, next_cursor: null };
      return Promise.resolve({
        status: 200,
        headers: new Headers(),
        text: () => Promise.resolve(JSON.stringify(init.method === 'GET' ? list : {})),
      });
    };
    const client = new TokenProxy({ apiKey: 'svc_sk_test', baseUrl: 'https://tp.test', fetch });
    const called: Record<string, Pair> = {};
    const clientRecord = client as unknown as Record<string, unknown>;
    for (const resourceName of Object.keys(clientRecord)) {
      const resource = clientRecord[resourceName];
      if (resource === null || typeof resource !== 'object') continue;
      const proto = Object.getPrototypeOf(resource) as Record<string, unknown>;
      for (const method of Object.getOwnPropertyNames(proto)) {
        const fn = proto[method];
        if (method === 'constructor' || typeof fn !== 'function') continue;
        const name = `${resourceName}.${method}`;
        const pair = table[name];
        expect(pair, `${name} is not in ROUTES`).toBeDefined();
        last = undefined;
        await (fn as (...a: unknown[]) => Promise<unknown>).apply(resource, argsFor(pair ?? ''));
        expect(last, name).toBe(pair);
        called[name] = last ?? '';
      }
    }
    expect(called).toEqual(table);
  });

  it('Python: the route table matches the OpenAPI document, and every method calls its own route', () => {
    const script = String.raw`
import inspect, json, sys
sys.path.insert(0, "clients/python/src")
import tokenproxy
from tokenproxy import ROUTES, TokenProxy

client = TokenProxy(api_key="svc_sk_test", base_url="https://tp.test")
last = []
def transport(method, url, headers, body, timeout):
    path = url.split("?")[0].split("/v1", 1)[1].replace("x_id", ":id")
    last.append(method + " " + path)
    payload = {"object": "list", "data": [], "has_more": False, "next_cursor": None} if method == "GET" else {}
    return 200, {}, json.dumps(payload).encode()
client._transport = transport

def dummy(param):
    text = str(param.annotation)
    if "Sequence" in text or "List" in text:
        return ["x"]
    return "x"

called = {}
for resource_name, resource in vars(client).items():
    if resource_name.startswith("_") or not hasattr(resource, "_client"):
        continue
    for method_name, fn in inspect.getmembers(resource, inspect.ismethod):
        if method_name.startswith("_"):
            continue
        name = resource_name + "." + method_name
        pair = ROUTES.get(name)
        args, kwargs = [], {}
        for p in inspect.signature(fn).parameters.values():
            if p.default is not inspect.Parameter.empty:
                continue
            if p.kind == p.POSITIONAL_OR_KEYWORD:
                args.append("x_id")
            elif p.kind == p.KEYWORD_ONLY:
                kwargs[p.name] = dummy(p)
        del last[:]
        fn(*args, **kwargs)
        called[name] = last[0] if len(last) == 1 else repr(last)

print(json.dumps({"routes": {k: m + " " + p for k, (m, p) in ROUTES.items()}, "called": called}))
`;
    const out = execFileSync('python3', ['-c', script], { cwd: ROOT, encoding: 'utf8' });
    const { routes, called } = JSON.parse(out) as {
      routes: Record<string, Pair>;
      called: Record<string, Pair>;
    };
    expectOneToOne(routes);
    expect(called).toEqual(routes);
    // The two libraries expose the same methods, each named in its language's case
    // (Python `tokens.revoke_all` is Node.js `tokens.revokeAll`).
    const camel = (name: string) => name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
    expect(Object.keys(routes).map(camel).sort()).toEqual(Object.keys(ROUTES).sort());
  });

  it("each library's README has a row for every method, with its endpoint", () => {
    const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    for (const [readme, name] of [
      ['clients/node/README.md', (n: string) => n],
      ['clients/python/README.md', snake],
    ] as const) {
      const text = readFileSync(path.join(ROOT, readme), 'utf8');
      for (const [method, route] of Object.entries(ROUTES)) {
        const row = text.split('\n').find((line) => line.startsWith(`| \`${name(method)}(`));
        expect(row, `${readme}: no row for ${name(method)}`).toBeDefined();
        expect(row, readme).toContain(`\`${route.method} /v1${route.path}\``);
      }
    }
  });
});
