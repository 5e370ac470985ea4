import type { Static } from 'typebox';
import { usagePeriod, type PlanLimits } from '../accounts/plans.js';
import type { Provider } from '../providers/providers.js';
import { formatProviderAuth } from '../providers/providers.js';
import type { AccountRecord, AnomalyEntry, ProviderKeyRecord, WebhookRecord } from '../store/records.js';
import type { AccountObject, AnomalyObject, KeyObject, ProviderObject, WebhookObject } from './schemas.js';

/** Store records → the snake_case JSON objects of DESIGN §5. Nothing secret is ever copied out. */

export { tokenJson as tokenView } from '../events/token-json.js';

export function keyView(key: ProviderKeyRecord): Static<typeof KeyObject> {
  return {
    key_id: key.id,
    name: key.name,
    provider: key.provider,
    hint: key.hint,
    created_at: key.createdAt,
    rotated_at: key.rotatedAt,
    deleted_at: key.deletedAt,
    token_count: key.tokenCount,
  };
}

export function accountView(
  account: AccountRecord,
  usage: { requests: number; activeTokens: number },
  limits: PlanLimits,
  now: Date,
  retention: { readonly logs: string; readonly rollups: string } = DEFAULT_RETENTION,
): Static<typeof AccountObject> {
  return {
    account_id: account.id,
    name: account.name,
    plan: account.plan,
    limits: { active_tokens: limits.activeTokens, requests_per_month: limits.requestsPerMonth },
    usage: {
      period_start: usagePeriod(now).start,
      requests: usage.requests,
      active_tokens: usage.activeTokens,
    },
    alert_email: account.alertEmail,
    created_at: account.createdAt,
    budget: account.budget ?? null,
    retention: { logs: retention.logs, rollups: retention.rollups },
  };
}

const DEFAULT_RETENTION = { logs: '30d', rollups: '400d' } as const;

export function providerView(provider: Provider, proxyUrl: string): Static<typeof ProviderObject> {
  return {
    id: provider.id,
    base_url: provider.baseUrl,
    auth: formatProviderAuth(provider.auth),
    builtin: provider.builtin,
    proxy_base_url: `${proxyUrl}/${provider.id}`,
  };
}

export { requestLogJson as requestLogView } from '../requestlog/json.js';

export function anomalyView(entry: AnomalyEntry): Static<typeof AnomalyObject> {
  return {
    anomaly_id: entry.id,
    timestamp: entry.timestamp,
    token_id: entry.tokenId,
    origin: entry.origin,
    ip: entry.ip,
    country: entry.country,
    path: entry.path,
    reason: entry.reason,
    kind: entry.kind,
    details: isDetails(entry.details) ? entry.details : null,
  };
}

/** Details are a JSON object as written by the anomaly model; anything else is shown as none. */
function isDetails(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function webhookView(webhook: WebhookRecord): Static<typeof WebhookObject> {
  return {
    webhook_id: webhook.id,
    url: webhook.url,
    events: [...webhook.events],
    created_at: webhook.createdAt,
    disabled_at: webhook.disabledAt,
    disabled_reason: webhook.disabledReason,
    failing_since: webhook.failingSince,
  };
}
