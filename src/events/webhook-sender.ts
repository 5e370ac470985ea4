import { request as httpRequest, type IncomingMessage } from 'node:http';
import { eventJson } from './event-json.js';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { EventRecord } from '../store/records.js';
import {
  AddressRefusedError,
  resolveDeliveryAddress,
  urlHostname,
  type HostResolver,
} from './address-guard.js';
import { webhookHeaders } from './webhook-signer.js';

import type { AttemptErrorClass } from '../store/webhook-tool-records.js';

/**
 * An attempt's result. `statusCode` and `errorClass` are set when a request was made (they become
 * the attempt's record in GET /v1/webhooks/:id/deliveries); a result without either sent nothing.
 */
export type AttemptResult =
  | { readonly ok: true; readonly statusCode?: number | undefined }
  | {
      readonly ok: false;
      readonly error: string;
      readonly statusCode?: number | undefined;
      readonly errorClass?: AttemptErrorClass | undefined;
    };

export interface WebhookSenderOptions {
  readonly allowPrivate: boolean;
  readonly resolver: HostResolver;
  /** Whole attempt, from DNS to response headers (Standard Webhooks suggests about 15 s). */
  readonly timeoutMs: number;
  readonly userAgent: string;
  /** Aborts the attempt when the server stops (delivery-worker.ts, `close`). */
  readonly shutdown?: AbortSignal | undefined;
}

const TIMED_OUT: AttemptResult = { ok: false, error: 'timed out', errorClass: 'timeout' };
/** An attempt the stopping server gave up on (delivery-worker.ts, `close`): retried on schedule. */
export const CUT_OFF: AttemptResult = {
  ok: false,
  error: 'cut off: the server was stopping',
  errorClass: 'other',
};

/** The delivery body: what `GET /v1/events` lists (event-json.ts). */
export function eventBody(event: EventRecord): string {
  return JSON.stringify(eventJson(event));
}

/**
 * One signed POST. Success is a 2xx answer within the timeout; redirects are not followed (a
 * redirect could lead to an address that was never checked). The error strings name what failed
 * without the URL (which may carry a receiver's own secret in its query).
 */
export async function sendWebhook(
  url: string,
  key: Buffer,
  event: EventRecord,
  timestampSeconds: number,
  options: WebhookSenderOptions,
): Promise<AttemptResult> {
  const target = new URL(url);
  // http:// was only ever accepted with allow_private_webhooks; turning that off stops plain-text
  // deliveries to endpoints created while it was on.
  if (target.protocol !== 'https:' && !options.allowPrivate) {
    return {
      ok: false,
      error: 'refused: plain http is allowed only with allow_private_webhooks',
      errorClass: 'refused',
    };
  }
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const deadline = options.shutdown === undefined ? timeout : AbortSignal.any([timeout, options.shutdown]);
  let address: string;
  try {
    address = (await resolveDeliveryAddress(target, options)).address;
  } catch (error) {
    if (error instanceof AddressRefusedError)
      return { ok: false, error: `refused: ${error.message}`, errorClass: 'refused' };
    return { ok: false, error: `DNS lookup failed: ${errorCode(error)}`, errorClass: 'dns' };
  }
  if (deadline.aborted) return timeout.aborted ? TIMED_OUT : CUT_OFF;
  const body = eventBody(event);
  const hostname = urlHostname(target);
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult): void => {
      if (settled) return;
      settled = true;
      deadline.removeEventListener('abort', onAbort);
      resolve(result);
    };
    // Connect to the checked address; the name still goes into Host and SNI, and the certificate is
    // verified against it.
    const req = request({
      protocol: target.protocol,
      host: address,
      port: target.port === '' ? undefined : Number(target.port),
      path: `${target.pathname}${target.search}`,
      method: 'POST',
      agent: false,
      ...(target.protocol === 'https:' && isIP(hostname) === 0 ? { servername: hostname } : {}),
      headers: {
        host: target.host,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'user-agent': options.userAgent,
        ...webhookHeaders(key, event.id, timestampSeconds, body),
      },
    });
    const onAbort = (): void => {
      req.destroy();
      finish(timeout.aborted ? TIMED_OUT : CUT_OFF);
    };
    deadline.addEventListener('abort', onAbort, { once: true });
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      // The answer's body means nothing to us; read it away so the connection closes cleanly.
      res.resume();
      res.on('error', () => undefined);
      finish(
        status >= 200 && status < 300
          ? { ok: true, statusCode: status }
          : { ok: false, error: `HTTP ${status}`, statusCode: status, errorClass: 'http_status' },
      );
    });
    req.on('error', (error) =>
      finish({ ok: false, error: `connection failed: ${errorCode(error)}`, errorClass: 'connection' }),
    );
    req.end(body);
  });
}

function errorCode(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as Error & { code?: unknown }).code;
    return typeof code === 'string' ? code : error.message;
  }
  return 'unknown error';
}
