/**
 * Every action the audit log records (docs/api.md, "Audit log"). An entry says who, what, which
 * object, when and from where: never a secret and never a request body. A module of its own, with no
 * imports, because the dashboard's action filter is built from it too.
 */
export const AUDIT_ACTIONS = [
  'token.created',
  'token.updated',
  'token.revoked',
  'token.revoked_all',
  'key.created',
  'key.rotated',
  'key.deleted',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.tested',
  'event.redelivered',
  'account.updated',
  'account.created',
  'account.plan_changed',
  'account.key_rotated',
  'api_key.created',
  'api_key.deleted',
  'session.created',
] as const;
