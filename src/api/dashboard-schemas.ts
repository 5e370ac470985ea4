import { Type } from 'typebox';
import { REFUSAL_REASONS } from '../requestlog/rollups.js';
import { BudgetSchema, Name, RateLimitSchema, Timestamp } from './schemas.js';

/** Schemas of the endpoints the dashboard added (DESIGN §12): token edits, the kill switch, usage. */

export const PatchTokenBody = Type.Object(
  {
    name: Type.Optional(Name),
    allowed_hosts: Type.Optional(
      Type.Array(Type.String(), {
        description: 'replaces the list; host names, *.wildcards or full origins',
      }),
    ),
    allowed_ips: Type.Optional(
      Type.Array(Type.String(), { description: 'replaces the list; [] allows any IP' }),
    ),
    rate_limit: Type.Optional(Type.Union([RateLimitSchema, Type.Null()], { description: 'null removes it' })),
    expires_at: Type.Optional(Type.Union([Timestamp, Type.Null()], { description: 'null: never expires' })),
    budget: Type.Optional(Type.Union([BudgetSchema, Type.Null()], { description: 'null removes it' })),
  },
  { additionalProperties: false },
);

export const UsageQuery = Type.Object(
  {
    window: Type.Optional(
      Type.Union([Type.Literal('24h'), Type.Literal('7d')], { description: 'how far back (default 24h)' }),
    ),
    bucket: Type.Optional(
      Type.Union([Type.Literal('1h'), Type.Literal('1d')], { description: 'bucket size (default 1h)' }),
    ),
  },
  { additionalProperties: false },
);

const reasonCounts = Object.fromEntries(REFUSAL_REASONS.map((reason) => [reason, Type.Integer()]));

const SpendLine = {
  requests: Type.Integer({ description: 'forwarded requests' }),
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  cost_micros: Type.Integer({ description: 'micro-USD, from the price table (unpriced models count 0)' }),
};

export const SpendObject = Type.Object(
  {
    ...SpendLine,
    by_token: Type.Array(Type.Object({ token_id: Type.String(), ...SpendLine })),
    by_model: Type.Array(
      Type.Object({
        model: Type.Union([Type.String(), Type.Null()], { description: 'null: unknown' }),
        ...SpendLine,
      }),
    ),
    buckets: Type.Array(Type.Object({ start: Timestamp, ...SpendLine }), {
      description: 'the same buckets as `buckets`, oldest first',
    }),
  },
  { description: 'provider tokens and cost in the window (issue 19), from the per-model rollups' },
);

export const BudgetStatusObject = Type.Object({
  scope: Type.Union([Type.Literal('account'), Type.Literal('token')]),
  token_id: Type.Union([Type.String(), Type.Null()]),
  budget: BudgetSchema,
  period: Type.String({ description: '2026-11-23, 2026-11 or total' }),
  used: Type.Number({ description: 'spent in the period, in USD or tokens (the unit)' }),
  limit: Type.Number(),
  unit: Type.Union([Type.Literal('usd'), Type.Literal('tokens')]),
  fraction: Type.Number({ description: 'used / limit, at most 1' }),
  resets_at: Type.Union([Timestamp, Type.Null()], { description: 'null for a total budget' }),
});

export const UsageObject = Type.Object({
  object: Type.Literal('usage'),
  window: Type.String(),
  bucket: Type.String(),
  start: Timestamp,
  end: Timestamp,
  forwarded: Type.Integer({ description: 'requests forwarded to the provider in the window' }),
  refused: Type.Integer({ description: 'requests of your tokens refused by tokenproxy in the window' }),
  refused_by_reason: Type.Object(reasonCounts, {
    description: 'refused requests by reason; every reason is present, 0 when none',
  }),
  buckets: Type.Array(Type.Object({ start: Timestamp, forwarded: Type.Integer(), refused: Type.Integer() }), {
    description: 'oldest first, one per bucket, empty buckets included',
  }),
  spend: SpendObject,
  budgets: Type.Array(BudgetStatusObject, {
    description: "spend against the account's budget and each token's, in their current periods",
  }),
});
