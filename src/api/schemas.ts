import { Type, type TSchema } from 'typebox';

/**
 * JSON Schemas of the management API. The same objects validate requests, shape responses and
 * generate `/v1/openapi.json`, so the document cannot drift from what the server does.
 */

const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export const ErrorBody = Type.Object({
  error: Type.Object({
    type: Type.String(),
    code: Type.String(),
    message: Type.String(),
    param: Type.Optional(Type.String()),
    request_id: Type.String(),
  }),
});

export const RateLimitSchema = Type.Object(
  {
    requests: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }),
    window: Type.String({
      minLength: 1,
      maxLength: 32,
      description: 'a count and a unit: 30s, 1m, 15 minutes, 1h, 1d',
    }),
  },
  { additionalProperties: false },
);

export const TokenObject = Type.Object({
  token_id: Type.String(),
  name: Type.String(),
  target_provider: Type.String(),
  real_key_ref: Type.String(),
  authorized_origins: Type.Array(Type.String()),
  authorized_ips: Type.Array(Type.String()),
  rate_limit: Type.Union([RateLimitSchema, Type.Null()]),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')]),
  created_at: Timestamp,
  last_used_at: NullableTimestamp,
  expires_at: NullableTimestamp,
  revoked_at: NullableTimestamp,
  request_count: Type.Integer(),
  sanitized_key_hint: Type.String(),
  proxy_base_url: Type.String(),
});

export const CreatedTokenObject = Type.Object({
  ...TokenObject.properties,
  sanitized_key: Type.String({ description: 'The sanitized token. Returned only here, once.' }),
});

export const KeyObject = Type.Object({
  key_id: Type.String(),
  name: Type.String(),
  provider: Type.String(),
  hint: Type.String({ description: 'last 4 characters of the real key ("" for keys under 12 characters)' }),
  created_at: Timestamp,
  rotated_at: NullableTimestamp,
  deleted_at: NullableTimestamp,
  token_count: Type.Integer({ description: 'active tokens using this key' }),
});

const NullableCount = Type.Union([Type.Integer(), Type.Null()]);

export const AccountObject = Type.Object({
  account_id: Type.String(),
  name: Type.String(),
  plan: Type.String(),
  limits: Type.Object({ active_tokens: NullableCount, requests_per_month: NullableCount }),
  usage: Type.Object({ period_start: Timestamp, requests: Type.Integer(), active_tokens: Type.Integer() }),
  alert_email: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
});

export const ProviderObject = Type.Object({
  id: Type.String(),
  base_url: Type.String(),
  auth: Type.String({ description: '"bearer" or "header:<name>"' }),
  builtin: Type.Boolean(),
  proxy_base_url: Type.String(),
});

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const RequestLogObject = Type.Object({
  request_id: Type.String({ description: 'also sent to the caller in the x-tokenproxy-request-id header' }),
  timestamp: Timestamp,
  token_id: Type.Union([Type.String(), Type.Null()], { description: 'null when no token matched' }),
  origin: NullableString,
  ip: Type.String(),
  country: Type.Union([Type.String(), Type.Null()], { description: 'ISO 3166 alpha-2 code, or null' }),
  pop: Type.String({ description: 'the tokenproxy instance (`pop` setting) that served the request' }),
  path: Type.String({ description: 'path as received, with the /<provider> prefix, without the query' }),
  status: Type.Integer(),
  authorized: Type.Boolean({ description: 'whether the origin (and IP) check passed' }),
  latency_ms: Type.Integer({ description: "time the proxy added, excluding the provider's" }),
  error_code: Type.Union([Type.String(), Type.Null()], {
    description: "the proxy's own error code when it answered itself (docs/errors.md); null when forwarded",
  }),
});

export const AnomalyObject = Type.Object({
  anomaly_id: Type.String(),
  timestamp: Timestamp,
  token_id: Type.String(),
  origin: NullableString,
  ip: Type.String(),
  country: NullableString,
  path: Type.String(),
  reason: Type.String({
    description: 'origin_not_allowed, ip_not_allowed, provider_mismatch or ip_backoff for breaches',
  }),
  kind: Type.String({ description: '"breach" for unauthorized requests' }),
});

export function listOf<T extends TSchema>(item: T) {
  return Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    has_more: Type.Boolean(),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  });
}

export const ListQuery = {
  limit: Type.Optional(Type.String({ description: 'page size, 1 to 100 (default 20)' })),
  cursor: Type.Optional(Type.String({ description: 'next_cursor of the previous page' })),
};

export const IdParams = Type.Object({ id: Type.String() });

// Bodies: closed objects, so an unknown field is an error that names it.

/** Printable ASCII without spaces: a real key goes into an HTTP header, so CR/LF must never pass. */
const RealKey = Type.String({
  minLength: 1,
  maxLength: 4096,
  pattern: '^[\\x21-\\x7E]+$',
  description: "the provider's real API key (1 to 4096 printable ASCII characters, no spaces)",
});

const Name = Type.String({ minLength: 1, maxLength: 200 });

export const CreateTokenBody = Type.Object(
  {
    name: Name,
    provider: Type.String({ minLength: 1, maxLength: 64 }),
    allowed_hosts: Type.Array(Type.String(), {
      description: 'host names, *.wildcards or full origins allowed to use the token',
    }),
    real_key: Type.Optional(RealKey),
    key_id: Type.Optional(
      Type.String({ description: 'an existing key of the same provider, instead of real_key' }),
    ),
    allowed_ips: Type.Optional(Type.Array(Type.String())),
    rate_limit: Type.Optional(RateLimitSchema),
    expires_at: Type.Optional(Type.Union([Timestamp, Type.Null()])),
  },
  { additionalProperties: false },
);

export const CreateKeyBody = Type.Object(
  { name: Name, provider: Type.String({ minLength: 1, maxLength: 64 }), real_key: RealKey },
  { additionalProperties: false },
);

export const RotateKeyBody = Type.Object({ real_key: RealKey }, { additionalProperties: false });

export const PatchAccountBody = Type.Object(
  {
    name: Type.Optional(Name),
    alert_email: Type.Optional(Type.Union([Type.String({ format: 'email', maxLength: 254 }), Type.Null()])),
  },
  { additionalProperties: false },
);

export const WebhookObject = Type.Object({
  webhook_id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String(), { description: 'event types delivered, or ["*"] for all' }),
  created_at: Timestamp,
  disabled_at: Type.Union([Timestamp, Type.Null()], {
    description: 'set when tokenproxy stopped delivering to it (deliveries failed for too long)',
  }),
  disabled_reason: Type.Union([Type.String(), Type.Null()]),
  failing_since: Type.Union([Timestamp, Type.Null()], {
    description: 'first failed attempt since the last successful delivery; null while healthy',
  }),
});

export const CreatedWebhookObject = Type.Object({
  ...WebhookObject.properties,
  secret: Type.String({ description: 'Signing secret (whsec_…). Returned only here, once.' }),
});

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ maxLength: 2048, description: 'https:// address of your receiver' }),
    events: Type.Array(Type.String(), { description: 'event types to receive, or ["*"] for all' }),
  },
  { additionalProperties: false },
);

export const EventObject = Type.Object({
  id: Type.String({ description: 'evt_…; also the webhook-id header of its deliveries' }),
  type: Type.String(),
  created_at: Timestamp,
  data: Type.Record(Type.String(), Type.Unknown()),
});
