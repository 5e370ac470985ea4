// A module of its own, without imports: errors.ts and headers.ts need it, and taking it from cors.ts
// closed an import cycle (errors → cors → exchange-io → h2-stream → errors).

/**
 * Response headers a page may read: rate limits (ours and the providers'), request ids. Providers'
 * request-id headers are listed by name since `*` is not honoured by every browser in use.
 */
export const EXPOSE_HEADERS = [
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'x-should-retry',
  'x-tokenproxy-request-id',
  'x-request-id',
  'request-id',
  'openai-processing-ms',
  'openai-version',
  'x-ratelimit-limit-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-requests',
  'x-ratelimit-reset-tokens',
  'anthropic-ratelimit-requests-limit',
  'anthropic-ratelimit-requests-remaining',
  'anthropic-ratelimit-requests-reset',
  'anthropic-ratelimit-tokens-limit',
  'anthropic-ratelimit-tokens-remaining',
  'anthropic-ratelimit-tokens-reset',
].join(', ');
