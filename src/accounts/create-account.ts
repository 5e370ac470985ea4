import { apiKeyStart, newApiKey, newId, secretDigest } from '../ids/formats.js';
import type { AccountRecord, PlanName } from '../store/records.js';
import type { Store } from '../store/store.js';

export interface CreatedAccount {
  readonly account: AccountRecord;
  /** Shown once to whoever created the account; only its digest is stored. */
  readonly apiKey: string;
}

export async function createAccount(
  store: Store,
  name: string,
  plan: PlanName,
  now: Date,
): Promise<CreatedAccount> {
  const apiKey = newApiKey();
  const account = await store.accounts.create({
    id: newId('account'),
    name,
    plan,
    createdAt: now.toISOString(),
    apiKeyDigest: secretDigest(apiKey),
    apiKeyStart: apiKeyStart(apiKey),
  });
  return { account, apiKey };
}

/**
 * First start on an empty store creates account `default` (plan `free`). Returns the new account,
 * or undefined when the store already has accounts.
 */
export async function bootstrapDefaultAccount(store: Store, now: Date): Promise<CreatedAccount | undefined> {
  if ((await store.accounts.count()) > 0) return undefined;
  return createAccount(store, 'default', 'free', now);
}
