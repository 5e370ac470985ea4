import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import { KEY_FIELDS, TOKEN_FIELDS, ok } from './helpers.js';

interface SchemaJson {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, SchemaJson>;
  required?: string[];
  additionalProperties?: boolean | SchemaJson;
  items?: SchemaJson;
  anyOf?: SchemaJson[];
  oneOf?: SchemaJson[];
  allOf?: SchemaJson[];
}

interface OperationJson {
  operationId?: string;
  requestBody?: { required?: boolean; content: Record<string, { schema: SchemaJson }> };
  parameters?: { name: string; in: string; required?: boolean; schema?: SchemaJson }[];
  responses: Record<string, { description?: string; content?: Record<string, { schema: SchemaJson }> }>;
}

interface OpenApiJson {
  openapi: string;
  info: { title: string; version: string };
  servers?: { url: string }[];
  paths: Record<string, Record<string, OperationJson>>;
  components?: {
    securitySchemes?: Record<string, { type: string; scheme?: string }>;
    schemas?: Record<string, SchemaJson>;
  };
  security?: Record<string, string[]>[];
}

/** The management API's routes (DESIGN §5, the groups built so far), as OpenAPI paths under /v1. */
const EXPECTED = [
  'POST /tokens',
  'GET /tokens',
  'GET /tokens/{id}',
  'DELETE /tokens/{id}',
  'PATCH /tokens/{id}',
  'POST /tokens/revoke_all',
  'GET /usage',
  'GET /webhooks/{id}/deliveries',
  'POST /keys',
  'GET /keys',
  'GET /keys/{id}',
  'DELETE /keys/{id}',
  'POST /keys/{id}/rotate',
  'GET /account',
  'PATCH /account',
  'GET /providers',
  'GET /logs',
  'GET /anomalies',
  'POST /webhooks',
  'GET /webhooks',
  'GET /webhooks/{id}',
  'DELETE /webhooks/{id}',
  'GET /events',
  'POST /api_keys',
  'GET /api_keys',
  'DELETE /api_keys/{id}',
  'GET /audit',
  'GET /logs/{id}',
  'PATCH /webhooks/{id}',
  'POST /webhooks/{id}/test',
  'POST /events/{id}/redeliver',
].sort();

/**
 * Routes as Fastify registered them, read back from `printRoutes({ commonPrefix: false })`:
 * `METHOD /path` for each, HEAD (added automatically for GET) left out.
 */
function registeredRoutes(tree: string): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?$/.exec(line);
    if (!m) continue;
    const depth = (m[1] ?? '').length / 4;
    stack.length = depth;
    stack.push(m[2] ?? '');
    const path = stack.join('');
    for (const method of (m[3] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      if (method !== 'HEAD') out.push(`${method} ${path}`);
    }
  }
  return out.sort();
}

/** Every object schema reachable from `schema`, with the path that leads to it. */
function objectSchemas(schema: SchemaJson, where: string): [string, SchemaJson][] {
  const found: [string, SchemaJson][] = [];
  if (schema.type === 'object' || schema.properties !== undefined) found.push([where, schema]);
  for (const [name, child] of Object.entries(schema.properties ?? {}))
    found.push(...objectSchemas(child, `${where}.${name}`));
  if (schema.items) found.push(...objectSchemas(schema.items, `${where}[]`));
  for (const list of [schema.anyOf, schema.oneOf, schema.allOf]) {
    for (const [i, child] of (list ?? []).entries()) found.push(...objectSchemas(child, `${where}|${i}`));
  }
  return found;
}

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`/v1/openapi.json (${fixture.name})`, () => {
    let h: ApiHarness;
    let doc: OpenApiJson;

    beforeAll(async () => {
      h = await startApiHarness(fixture);
      doc = ok<OpenApiJson>(await h.request('GET', '/v1/openapi.json', { apiKey: null }));
    });
    afterAll(async () => {
      await h.close();
    });

    it('is an OpenAPI 3.1 document served as JSON', async () => {
      const res = await h.request('GET', '/v1/openapi.json', { apiKey: null });
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
      expect(doc.info.title).toBeTypeOf('string');
      expect(doc.info.version).toBe('test');
      expect(doc.servers?.map((s) => s.url)).toEqual(['/v1']);
    });

    it('lists exactly the registered /v1 routes', () => {
      const documented = Object.entries(doc.paths)
        .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`))
        .sort();
      expect(documented).toEqual(EXPECTED);

      // And those are exactly what Fastify has under /v1 (besides the document itself).
      const registered = registeredRoutes(h.app.printRoutes({ commonPrefix: false }))
        .filter((r) => r.split(' ')[1]?.startsWith('/v1/') === true)
        .filter((r) => r !== 'GET /v1/openapi.json')
        // The dashboard's sign-in and sign-out: for browsers only, so neither documented nor in the
        // client libraries (docs/api.md, "Dashboard sessions").
        .filter((r) => r !== 'POST /v1/session' && r !== 'DELETE /v1/session')
        .map((r) => r.replace(' /v1/', ' /').replace(/:(\w+)/g, '{$1}'))
        .sort();
      expect(registered).toEqual(EXPECTED);
      for (const route of EXPECTED) {
        const [method = '', path = ''] = route.split(' ');
        expect(h.app.hasRoute({ method, url: `/v1${path.replace(/\{(\w+)\}/g, ':$1')}` }), route).toBe(true);
      }
    });

    it('gives every request body a closed schema (additionalProperties: false, at every level)', () => {
      const withBodies: string[] = [];
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          if (!op.requestBody) continue;
          withBodies.push(`${method.toUpperCase()} ${path}`);
          const schema = op.requestBody.content['application/json']?.schema;
          expect(schema, `${method} ${path}`).toBeDefined();
          if (!schema) continue;
          expect(schema.type).toBe('object');
          const objects = objectSchemas(schema, `${method} ${path}`);
          expect(objects.length).toBeGreaterThan(0);
          for (const [where, object] of objects) expect(object.additionalProperties, where).toBe(false);
        }
      }
      expect(withBodies.sort()).toEqual(
        [
          'POST /tokens',
          'PATCH /tokens/{id}',
          'POST /keys',
          'POST /keys/{id}/rotate',
          'PATCH /account',
          'POST /webhooks',
          'POST /api_keys',
          'PATCH /webhooks/{id}',
        ].sort(),
      );
    });

    it('documents required body fields and snake_case names', () => {
      const create = doc.paths['/tokens']?.post?.requestBody?.content['application/json']?.schema;
      expect(create?.required?.sort()).toEqual(['allowed_hosts', 'name', 'provider']);
      expect(Object.keys(create?.properties ?? {}).sort()).toEqual(
        [
          'allowed_hosts',
          'allowed_ips',
          'budget',
          'expires_at',
          'key_id',
          'name',
          'provider',
          'rate_limit',
          'real_key',
        ].sort(),
      );
      const key = doc.paths['/keys']?.post?.requestBody?.content['application/json']?.schema;
      expect(key?.required?.sort()).toEqual(['name', 'provider', 'real_key']);
      const rotate = doc.paths['/keys/{id}/rotate']?.post?.requestBody?.content['application/json']?.schema;
      expect(rotate?.required).toEqual(['real_key']);
    });

    it('documents path and query parameters', () => {
      for (const path of ['/tokens/{id}', '/keys/{id}', '/keys/{id}/rotate']) {
        for (const op of Object.values(doc.paths[path] ?? {})) {
          expect(
            op.parameters?.some((p) => p.name === 'id' && p.in === 'path' && p.required === true),
            path,
          ).toBe(true);
        }
      }
      const query = (path: string) =>
        (doc.paths[path]?.get?.parameters ?? [])
          .filter((p) => p.in === 'query')
          .map((p) => p.name)
          .sort();
      expect(query('/tokens')).toEqual(['cursor', 'limit', 'status']);
      expect(query('/keys')).toEqual(['cursor', 'limit']);
    });

    /** A schema with its `$ref` (to #/components/schemas/…) followed. */
    function resolve(schema: SchemaJson | undefined): SchemaJson | undefined {
      const ref = schema?.$ref;
      if (ref === undefined) return schema;
      expect(ref).toMatch(/^#\/components\/schemas\/\w+$/);
      const target = doc.components?.schemas?.[ref.split('/').pop() ?? ''];
      expect(target, ref).toBeDefined();
      return target;
    }

    it('describes the response objects with the fields the API returns', () => {
      const props = (schema: SchemaJson | undefined) => Object.keys(resolve(schema)?.properties ?? {}).sort();
      const created = doc.paths['/tokens']?.post?.responses['201']?.content?.['application/json']?.schema;
      expect(props(created)).toEqual([...TOKEN_FIELDS, 'sanitized_key'].sort());
      const token = doc.paths['/tokens/{id}']?.get?.responses['200']?.content?.['application/json']?.schema;
      expect(props(token)).toEqual(TOKEN_FIELDS);
      expect(
        props(doc.paths['/tokens/{id}']?.delete?.responses['200']?.content?.['application/json']?.schema),
      ).toEqual(TOKEN_FIELDS);
      const list = doc.paths['/tokens']?.get?.responses['200']?.content?.['application/json']?.schema;
      expect(props(list)).toEqual(['data', 'has_more', 'next_cursor', 'object']);
      expect(props(resolve(list)?.properties?.data?.items)).toEqual(TOKEN_FIELDS);
      const key = doc.paths['/keys']?.post?.responses['201']?.content?.['application/json']?.schema;
      expect(props(key)).toEqual(KEY_FIELDS);
      // Nothing in any response schema could carry a real key or ciphertext.
      const text = JSON.stringify([doc.paths, doc.components]);
      expect(text).not.toMatch(/"(ciphertext|real_key_ciphertext|digest)"/);
    });

    const operations = () =>
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => ({ route: `${method.toUpperCase()} ${path}`, method, op })),
      );

    it('gives every operation a unique operationId', () => {
      const ids = operations().map(({ route, op }) => {
        expect(op.operationId, route).toMatch(/^[a-z][A-Za-z]+$/);
        return op.operationId;
      });
      expect(new Set(ids).size).toBe(EXPECTED.length);
      expect(doc.paths['/tokens']?.post?.operationId).toBe('createToken');
      expect(doc.paths['/tokens/{id}']?.delete?.operationId).toBe('revokeToken');
      expect(doc.paths['/api_keys']?.post?.operationId).toBe('createApiKey');
      expect(doc.paths['/audit']?.get?.operationId).toBe('listAudit');
    });

    it('declares limit as an integer from 1 to 100 on every list', () => {
      const lists = operations().filter(({ op }) => op.parameters?.some((p) => p.name === 'cursor'));
      expect(lists.map((l) => l.route).sort()).toEqual(
        [
          'GET /tokens',
          'GET /keys',
          'GET /logs',
          'GET /anomalies',
          'GET /webhooks',
          'GET /webhooks/{id}/deliveries',
          'GET /events',
          'GET /api_keys',
          'GET /audit',
        ].sort(),
      );
      for (const { route, op } of lists) {
        const limit = op.parameters?.find((p) => p.name === 'limit' && p.in === 'query');
        expect(limit?.schema, route).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
      }
    });

    it('describes each error status an operation can answer with the one shared error schema', () => {
      const error = doc.components?.schemas?.Error;
      expect(Object.keys(error?.properties ?? {})).toEqual(['error']);
      expect(Object.keys(error?.properties?.error?.properties ?? {}).sort()).toEqual(
        ['code', 'message', 'param', 'request_id', 'type'].sort(),
      );
      const statuses = (op: OperationJson | undefined) =>
        Object.keys(op?.responses ?? {})
          .filter((s) => Number(s) >= 400)
          .sort();
      for (const { route, op } of operations()) {
        const errors = statuses(op);
        for (const status of ['400', '401', '500', '503']) expect(errors, route).toContain(status);
        for (const status of errors) {
          const response = op.responses[status];
          expect(response?.content?.['application/json']?.schema.$ref, `${route} ${status}`).toBe(
            '#/components/schemas/Error',
          );
          expect(response?.description, `${route} ${status}`).not.toBe('Default Response');
        }
        if (op.requestBody) for (const s of ['413', '415']) expect(errors, route).toContain(s);
        if (route.includes('{id}')) expect(errors, route).toContain('404');
        // A read-only key is refused every change (insufficient_scope); a retried POST or DELETE
        // can meet its Idempotency-Key in use.
        if (!route.startsWith('GET ')) expect(errors, route).toContain('403');
        if (route.startsWith('POST ') || route.startsWith('DELETE ')) expect(errors, route).toContain('409');
      }
      expect(statuses(doc.paths['/tokens']?.post)).toEqual(
        ['400', '401', '403', '404', '409', '413', '415', '500', '503'].sort(),
      );
      expect(statuses(doc.paths['/tokens']?.get)).toEqual(['400', '401', '500', '503']);
    });

    it('declares the Idempotency-Key header on the POST and DELETE routes, and only there', () => {
      for (const { route, method, op } of operations()) {
        const header = op.parameters?.find((p) => p.in === 'header' && /^idempotency-key$/i.test(p.name));
        if (method === 'post' || method === 'delete') {
          expect(header, route).toBeDefined();
          expect(header?.required, route).toBe(false);
        } else {
          expect(header, route).toBeUndefined();
        }
      }
    });

    it('names the shared objects as components and references them', () => {
      expect(Object.keys(doc.components?.schemas ?? {})).toEqual(
        expect.arrayContaining(['Error', 'Token', 'CreatedToken', 'Key', 'Account', 'Webhook', 'Event']),
      );
      const ref = (path: string, method: string, status: string) =>
        doc.paths[path]?.[method]?.responses[status]?.content?.['application/json']?.schema.$ref;
      expect(ref('/tokens/{id}', 'get', '200')).toBe('#/components/schemas/Token');
      expect(ref('/tokens/{id}', 'delete', '200')).toBe('#/components/schemas/Token');
      expect(ref('/keys', 'post', '201')).toBe('#/components/schemas/Key');
      expect(ref('/account', 'get', '200')).toBe('#/components/schemas/Account');
      const list = doc.paths['/tokens']?.get?.responses['200']?.content?.['application/json']?.schema;
      expect(list?.properties?.data?.items?.$ref).toBe('#/components/schemas/Token');
      // Every $ref in the document points at a component that exists.
      const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1] ?? '');
      expect(refs.length).toBeGreaterThan(0);
      for (const r of refs)
        expect(doc.components?.schemas?.[r.replace('#/components/schemas/', '')], r).toBeDefined();
    });

    it('declares bearer authentication for the API', () => {
      const schemes = Object.values(doc.components?.securitySchemes ?? {});
      expect(schemes).toContainEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
      expect(doc.security?.length).toBeGreaterThan(0);
    });
  });
}
