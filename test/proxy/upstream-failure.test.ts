import type { Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { connectionLimits } from '../../src/config/connection-limits.js';
import { DescriptorAlarm } from '../../src/observability/descriptor-alarm.js';
import { logUpstreamFailure, upstreamCause } from '../../src/proxy/upstream-failure.js';

describe('an upstream connection that found no descriptor', () => {
  it.each([
    ['EMFILE', 'descriptors'],
    ['ENFILE', 'descriptors'],
    ['ECONNREFUSED', 'connect_refused'],
    ['EWHATEVER', 'other'],
  ] as const)('%s is cause %s', (code, cause) => {
    expect(upstreamCause(code)).toBe(cause);
  });

  it('keeps its line per request, and tells the alarm, which says what to do once', () => {
    const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
    const logger = {
      warn: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'warn', fields, msg }),
      error: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'error', fields, msg }),
    } as unknown as Logger;
    const alarm = new DescriptorAlarm(
      logger,
      connectionLimits({ proxy: 'auto', upstream: 'auto' }, 1024),
      'proxy',
    );
    // undici wraps the socket's error; the inner code is the one that says why.
    const failure = Object.assign(new Error('connect failed'), {
      code: 'UND_ERR_SOCKET',
      cause: Object.assign(new Error('connect EMFILE'), { code: 'EMFILE' }),
    });
    for (const id of ['req_1', 'req_2', 'req_3']) {
      logUpstreamFailure(logger, failure, id, 'openai', 'upstream_unreachable', false, alarm);
    }
    const perRequest = lines.filter((l) => l.msg === 'upstream request failed');
    expect(perRequest.map((l) => [l.fields.request_id, l.fields.cause, l.fields.error_code])).toEqual([
      ['req_1', 'descriptors', 'EMFILE'],
      ['req_2', 'descriptors', 'EMFILE'],
      ['req_3', 'descriptors', 'EMFILE'],
    ]);
    const told = lines.filter((l) => l.level === 'error');
    expect(told).toHaveLength(1);
    expect(told[0]?.fields).toMatchObject({
      at: 'upstream_connect',
      error_code: 'EMFILE',
      upstream_max_connections: 416,
    });
    alarm.flush();
    expect(lines.filter((l) => l.level === 'error').map((l) => l.fields.failures)).toEqual([1, 2]);
  });
});
