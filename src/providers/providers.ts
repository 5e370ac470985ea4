/**
 * A provider is where a token's requests go and how the real key is presented there (DESIGN §3).
 * `auth` is either `bearer` (`Authorization: Bearer <key>`) or `header:<name>` (`x-api-key: <key>`).
 */
export type ProviderAuth = { readonly kind: 'bearer' } | { readonly kind: 'header'; readonly header: string };

export interface Provider {
  readonly id: string;
  readonly baseUrl: string;
  readonly auth: ProviderAuth;
  readonly builtin: boolean;
}

export const PROVIDER_ID_PATTERN = /^[a-z][a-z0-9-]{0,31}$/;

const BEARER: ProviderAuth = { kind: 'bearer' };

export const BUILTIN_PROVIDERS: readonly Provider[] = [
  { id: 'openai', baseUrl: 'https://api.openai.com', auth: BEARER, builtin: true },
  {
    id: 'anthropic',
    baseUrl: 'https://api.anthropic.com',
    auth: { kind: 'header', header: 'x-api-key' },
    builtin: true,
  },
  { id: 'mistral', baseUrl: 'https://api.mistral.ai', auth: BEARER, builtin: true },
  { id: 'groq', baseUrl: 'https://api.groq.com', auth: BEARER, builtin: true },
  { id: 'openrouter', baseUrl: 'https://openrouter.ai', auth: BEARER, builtin: true },
  { id: 'deepseek', baseUrl: 'https://api.deepseek.com', auth: BEARER, builtin: true },
  {
    id: 'gemini',
    baseUrl: 'https://generativelanguage.googleapis.com',
    auth: { kind: 'header', header: 'x-goog-api-key' },
    builtin: true,
  },
];

/** `bearer` or `header:x-api-key` → ProviderAuth; undefined when the text is neither. */
export function parseProviderAuth(text: string): ProviderAuth | undefined {
  if (text === 'bearer') return BEARER;
  const m = /^header:([a-z0-9-]{1,64})$/i.exec(text);
  if (!m?.[1]) return undefined;
  const header = m[1].toLowerCase();
  // These would clash with what the proxy strips or sets itself.
  if (header === 'authorization' || header === 'host' || header === 'origin') return undefined;
  return { kind: 'header', header };
}

export function formatProviderAuth(auth: ProviderAuth): string {
  return auth.kind === 'bearer' ? 'bearer' : `header:${auth.header}`;
}

/**
 * Built-ins plus the config file's `providers`. A custom provider with a built-in's id replaces it
 * (to point `openai` at a compatible gateway, or at a test stand-in).
 */
export class ProviderRegistry {
  readonly #byId: ReadonlyMap<string, Provider>;

  constructor(custom: readonly Provider[]) {
    const map = new Map<string, Provider>();
    for (const p of BUILTIN_PROVIDERS) map.set(p.id, p);
    for (const p of custom) map.set(p.id, p);
    this.#byId = map;
  }

  get(id: string): Provider | undefined {
    return this.#byId.get(id);
  }

  list(): readonly Provider[] {
    return [...this.#byId.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  ids(): string[] {
    return this.list().map((p) => p.id);
  }
}
