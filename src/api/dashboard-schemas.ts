import { Type } from 'typebox';
import { REFUSAL_REASONS } from '../requestlog/rollups.js';
import { BudgetSchema, RateLimitSchema } from './schemas.js';

/** Schemas of the endpoints the dashboard added (DESIGN §12): token edits, the kill switch, usage. */

const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });

export const PatchTokenBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
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
});
