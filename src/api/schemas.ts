import { Type, type Static, type TObject, type TSchema, type TUnsafe } from 'typebox';
import { DISPLAY_NAME_PATTERN, DISPLAY_NAME_RULE } from '../rules/display-name.js';

/**
 * JSON Schemas of the management API. The same objects validate requests, shape responses and
 * generate `/v1/openapi.json`, so the document cannot drift from what the server does.
 */

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

const ErrorBodySchema = Type.Object({
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

export const BudgetSchema = Type.Object(
  {
    amount_usd: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'a spend cap in USD' })),
    tokens: Type.Optional(Type.Integer({ minimum: 1, description: 'a cap on input + output tokens' })),
    period: Type.Union([Type.Literal('day'), Type.Literal('month'), Type.Literal('total')], {
      description: 'UTC day, UTC calendar month, or all time',
    }),
  },
  { additionalProperties: false, description: 'exactly one of amount_usd and tokens (docs/usage.md)' },
);
const NullableBudget = Type.Union([BudgetSchema, Type.Null()]);

const TokenObjectSchema = Type.Object({
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
  budget: NullableBudget,
});

const CreatedTokenObjectSchema = Type.Object({
  ...TokenObjectSchema.properties,
  sanitized_key: Type.String({ description: 'The sanitized token. Returned only here, once.' }),
});

const KeyObjectSchema = Type.Object({
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

const AccountObjectSchema = Type.Object({
  account_id: Type.String(),
  name: Type.String(),
  plan: Type.String(),
  limits: Type.Object({ active_tokens: NullableCount, requests_per_month: NullableCount }),
  usage: Type.Object({ period_start: Timestamp, requests: Type.Integer(), active_tokens: Type.Integer() }),
  alert_email: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  budget: Type.Union([BudgetSchema, Type.Null()], {
    description: 'spend cap over all the tokens of the account',
  }),
  retention: Type.Object(
    {
      logs: Type.String({
        description:
          'how long request-log records, anomalies and finished events are kept: "30d", or "forever"',
      }),
      rollups: Type.String({
        description: 'how long the per-hour usage rollups are kept: "400d", or "forever"',
      }),
    },
    { description: 'the server settings log_retention and rollup_retention' },
  ),
});

const ProviderObjectSchema = Type.Object({
  id: Type.String(),
  base_url: Type.String(),
  auth: Type.String({ description: '"bearer" or "header:<name>"' }),
  builtin: Type.Boolean(),
  proxy_base_url: Type.String(),
});

const NullableString = Type.Union([Type.String(), Type.Null()]);

const RequestLogObjectSchema = Type.Object({
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
  model: Type.Union([Type.String(), Type.Null()], {
    description: 'the model the request named or the answer reported; null when unknown',
  }),
  input_tokens: Type.Union([Type.Integer(), Type.Null()], {
    description: 'input (prompt) tokens the provider reported; null when its answer said none',
  }),
  output_tokens: Type.Union([Type.Integer(), Type.Null()], {
    description: 'output (completion) tokens the provider reported; null when its answer said none',
  }),
  cost_micros: Type.Union([Type.Integer(), Type.Null()], {
    description: 'cost in micro-USD from the price table; null for a model without a price or unknown usage',
  }),
});

const AnomalyObjectSchema = Type.Object({
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
  details: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description:
      'What an anomaly of authorized use measured (docs/limits.md lists them per reason); null for breaches',
  }),
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
  // Query strings are text: `coerceLimit` turns digits into a number before validation, so the
  // document says "integer" and validation checks the range (types are not coerced elsewhere).
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'page size' })),
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

/** A name people give a token, key, API key or account (src/rules/display-name.ts). */
export const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: DISPLAY_NAME_PATTERN,
  description: DISPLAY_NAME_RULE,
});

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
    budget: Type.Optional(NullableBudget),
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
    budget: Type.Optional(Type.Union([BudgetSchema, Type.Null()], { description: 'null removes it' })),
    plan: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'refused (403 plan_change_forbidden): the operator sets plans',
      }),
    ),
  },
  { additionalProperties: false },
);

const WebhookObjectSchema = Type.Object({
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

const CreatedWebhookObjectSchema = Type.Object({
  ...WebhookObjectSchema.properties,
  secret: Type.String({ description: 'Signing secret (whsec_…). Returned only here, once.' }),
});

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ maxLength: 2048, description: 'https:// address of your receiver' }),
    events: Type.Array(Type.String(), { description: 'event types to receive, or ["*"] for all' }),
  },
  { additionalProperties: false },
);

const EventObjectSchema = Type.Object({
  id: Type.String({ description: 'evt_…; also the webhook-id header of its deliveries' }),
  type: Type.String(),
  created_at: Timestamp,
  data: Type.Record(Type.String(), Type.Unknown()),
});

// Response objects are shared components: registered once (`addSchema`) and referenced by `$ref`
// from each route, so /v1/openapi.json names them (`#/components/schemas/Token`) and clients
// generated from it get one type per object.

const components: { $id: string }[] = [];

export function component<T extends TObject>(id: string, schema: T): TUnsafe<Static<T>> {
  components.push({ ...schema, $id: id });
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` });
}

export const ErrorBody = component('Error', ErrorBodySchema);
export const TokenObject = component('Token', TokenObjectSchema);
export const CreatedTokenObject = component('CreatedToken', CreatedTokenObjectSchema);
export const KeyObject = component('Key', KeyObjectSchema);
export const AccountObject = component('Account', AccountObjectSchema);
export const ProviderObject = component('Provider', ProviderObjectSchema);
export const RequestLogObject = component('RequestLog', RequestLogObjectSchema);
export const AnomalyObject = component('Anomaly', AnomalyObjectSchema);
export const WebhookObject = component('Webhook', WebhookObjectSchema);
export const CreatedWebhookObject = component('CreatedWebhook', CreatedWebhookObjectSchema);
export const EventObject = component('Event', EventObjectSchema);

/** Every shared component, for `addSchema` before the routes that reference them. */
export const SHARED_SCHEMAS: readonly { $id: string }[] = components;
