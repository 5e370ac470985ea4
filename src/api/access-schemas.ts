import { Type } from 'typebox';
import { AUDIT_ACTIONS } from '../audit/action-names.js';
import { ListQuery, Name, Timestamp, component } from './schemas.js';

/** Schemas of the API-key and audit routes (issue 18), registered as shared components. */

const Scope = Type.Union([Type.Literal('full'), Type.Literal('read')], {
  description: '"full" may do everything; "read" only GET (every write answers 403 insufficient_scope)',
});

const ApiKeyObjectSchema = Type.Object({
  id: Type.String({ description: 'ak_…' }),
  name: Type.String(),
  scope: Scope,
  start: Type.String({ description: 'the first characters of the key, to tell keys apart' }),
  created_at: Timestamp,
});

export const ApiKeyObject = component('ApiKey', ApiKeyObjectSchema);
export const CreatedApiKeyObject = component(
  'CreatedApiKey',
  Type.Object({
    ...ApiKeyObjectSchema.properties,
    api_key: Type.String({ description: 'svc_sk_…: returned only here, once; only its digest is stored' }),
  }),
);

export const CreateApiKeyBody = Type.Object(
  {
    name: Name,
    scope: Type.Optional(Scope),
  },
  { additionalProperties: false },
);

export const AuditEntryObject = component(
  'AuditEntry',
  Type.Object({
    id: Type.String({ description: 'aud_…' }),
    action: Type.String({ description: `one of ${AUDIT_ACTIONS.join(', ')}` }),
    object_id: Type.Union([Type.String(), Type.Null()], { description: 'the id of what changed' }),
    actor: Type.Object({
      type: Type.Union([Type.Literal('api_key'), Type.Literal('session'), Type.Literal('cli')]),
      id: Type.Union([Type.String(), Type.Null()], { description: 'the API key id (ak_…) for api_key' }),
      name: Type.String({ description: 'the API key name, "dashboard session" or "cli"' }),
    }),
    ip: Type.Union([Type.String(), Type.Null()], { description: 'client address; null for the CLI' }),
    created_at: Timestamp,
  }),
);

export const AuditQuery = Type.Object(
  {
    ...ListQuery,
    action: Type.Optional(Type.Union(AUDIT_ACTIONS.map((a) => Type.Literal(a)))),
    object_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);
