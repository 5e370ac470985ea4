import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import type { Dispatcher, RequestInit as UndiciRequestInit } from 'undici';

export interface SdkClientOptions {
  baseURL: string;
  apiKey: string;
  /** PEM of the CA that signed the server's certificate (e.g. `mock.caCertPem`). */
  ca: string;
  /** Sent on every request, e.g. `{ Origin: 'https://app.example.com' }`. */
  headers?: Record<string, string>;
  /** Defaults to 0: SDK retries would hide the exact status and request count a test asserts on. */
  maxRetries?: number;
  timeoutMs?: number;
  /** Reuse a dispatcher (and its connections) instead of a fresh `Agent` trusting `ca`. */
  dispatcher?: Dispatcher;
}

export interface AnthropicClientOptions extends SdkClientOptions {
  /**
   * `bearer` (default) is what @anthropic-ai/sdk ≥ 1 sends for `apiKey`: `Authorization: Bearer <key>`.
   * `x-api-key` mimics older SDKs (and curl examples), which send only `x-api-key: <key>`.
   */
  auth?: 'bearer' | 'x-api-key';
}

/** The `fetch` signature both SDKs accept. */
type SdkFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * Both SDKs default to Node's global fetch, whose bundled undici is a different major than the `undici`
 * package; handing it an `Agent` from the package happens to work but is not a supported pairing. Using the
 * package's own `fetch` with its own `Agent` keeps dispatcher and fetch from the same undici.
 *
 * Custom headers such as `Origin` pass through either fetch untouched: neither enforces the browser's
 * forbidden-header list, and for a non-browser caller neither adds an `Origin` of its own.
 */
function fetchTrusting(ca: string, dispatcher: Dispatcher | undefined): SdkFetch {
  const agent = dispatcher ?? new Agent({ connect: { ca } });
  return async (input, init) => {
    // The SDKs always call fetch(url, init); a Request would carry method and headers this wrapper drops.
    if (typeof input !== 'string' && !(input instanceof URL))
      throw new TypeError('expected a URL, not a Request');
    // Same WHATWG shape, declared twice (Node's global RequestInit vs undici's own).
    return undiciFetch(input, { ...(init as UndiciRequestInit), dispatcher: agent });
  };
}

export function openaiClient(options: SdkClientOptions): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    // Explicit nulls so OPENAI_ORG_ID / OPENAI_PROJECT_ID in the developer's environment add no headers.
    organization: null,
    project: null,
    fetch: fetchTrusting(options.ca, options.dispatcher),
    defaultHeaders: options.headers,
    maxRetries: options.maxRetries ?? 0,
    timeout: options.timeoutMs ?? 30_000,
  });
}

export function anthropicClient(options: AnthropicClientOptions): Anthropic {
  const headers: Record<string, string | null> = { ...options.headers };
  if (options.auth === 'x-api-key') {
    // A null default header deletes the SDK's own `Authorization: Bearer`; `apiKey` stays set so the SDK
    // does not fall back to credentials from the environment or a local profile.
    headers['x-api-key'] = options.apiKey;
    headers.authorization = null;
  }
  return new Anthropic({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    fetch: fetchTrusting(options.ca, options.dispatcher),
    defaultHeaders: headers,
    maxRetries: options.maxRetries ?? 0,
    timeout: options.timeoutMs ?? 30_000,
  });
}
