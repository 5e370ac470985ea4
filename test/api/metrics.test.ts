import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { startApiHarness, type ApiHarness } from '../support/api-harness.js';
import { databases } from '../support/databases.js';
import { expectError, ok } from './helpers.js';

for (const fixture of databases) {
  describe.skipIf(!fixture.available)(`the management listener's /metrics (${fixture.name})`, () => {
    let h: ApiHarness;
    let metrics: Metrics;

    beforeAll(async () => {
      metrics = createMetrics({ providers: ['openai', 'anthropic'] });
      h = await startApiHarness(fixture, { metricsRegistry: metrics.registry });
    });
    afterAll(async () => {
      await h.close();
    });

    describe('GET /metrics', () => {
      it('serves Prometheus text without an API key, labelled by provider and status only', async () => {
        const secrets = ['svc_hb_', '203.0.113.7', 'https://app.example', 'Zq9'.repeat(14)];
        metrics.observe('openai', 200, 0.42, 350);
        metrics.observe('openai', 403, 0.05, null);
        metrics.observe('anthropic', 502, 1.5, 12);
        // A path segment that is no known provider must not become a series of its own.
        metrics.observe(secrets[3] ?? '', 404, 0.1, null);
        const queue = metrics.queue('request_log');
        queue.watchDepth(() => 7);
        queue.dropped(2, 'queue_full');

        const res = await h.request('GET', '/metrics', { apiKey: null });
        expect(res.status).toBe(200);
        expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
        const text = res.text;
        expect(text).toMatch(/^tokenproxy_proxy_requests_total\{provider="openai",status="200"\} 1$/m);
        expect(text).toMatch(/^tokenproxy_proxy_requests_total\{provider="openai",status="403"\} 1$/m);
        expect(text).toMatch(/^tokenproxy_proxy_requests_total\{provider="unknown",status="404"\} 1$/m);
        expect(text).toMatch(/^tokenproxy_proxy_added_latency_seconds_bucket\{le="0\.0005"\} 3$/m);
        expect(text).toMatch(/^tokenproxy_proxy_added_latency_seconds_count 4$/m);
        expect(text).toMatch(/^tokenproxy_proxy_upstream_latency_seconds_count\{provider="openai"\} 1$/m);
        expect(text).toMatch(
          /^tokenproxy_proxy_upstream_latency_seconds_bucket\{le="0\.5",provider="openai"\} 1$/m,
        );
        expect(text).toMatch(/^tokenproxy_log_queue_depth\{queue="request_log"\} 7$/m);
        expect(text).toMatch(/^tokenproxy_log_dropped_total\{queue="request_log",reason="queue_full"\} 2$/m);
        expect(text).toMatch(/^process_cpu_user_seconds_total /m);
        expect(text).toMatch(/^nodejs_heap_size_used_bytes /m);

        const labelNames = new Set<string>();
        for (const line of text.split('\n')) {
          if (!line.startsWith('tokenproxy_')) continue;
          for (const [, name] of line.matchAll(/[{,]([a-z_]+)="/g)) labelNames.add(name ?? '');
        }
        expect([...labelNames].sort()).toEqual(['le', 'provider', 'queue', 'reason', 'status']);
        for (const secret of secrets) expect(text).not.toContain(secret);
      });

      it('is not part of the OpenAPI document', async () => {
        const doc = ok<{ paths: Record<string, unknown> }>(
          await h.request('GET', '/v1/openapi.json', { apiKey: null }),
        );
        expect(Object.keys(doc.paths)).not.toContain('/metrics');
        expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/logs', '/anomalies']));
      });
    });
  });
}

describe('GET /metrics without a registry', () => {
  it('is not served', async () => {
    const [sqlite] = databases;
    if (sqlite === undefined) throw new Error('no database fixture');
    const h = await startApiHarness(sqlite);
    try {
      expectError(await h.request('GET', '/metrics', { apiKey: null }), 404, 'route_not_found');
    } finally {
      await h.close();
    }
  });
});
