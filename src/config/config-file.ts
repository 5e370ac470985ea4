import { readFileSync } from 'node:fs';
import { PROVIDER_ID_PATTERN, parseProviderAuth, type Provider } from '../providers/providers.js';
import { ConfigError } from './config-error.js';
import { parseJsonFile } from './json-syntax.js';
import { checkShape, describeProblem, text, type ObjectShape } from './object-shape.js';
import { SETTINGS } from './settings.js';

/** The JSON config file (`--config` / `TOKENPROXY_CONFIG`): reading it, and its `providers` key. */

const FILE_PROVIDER_SHAPE = {
  base_url: { rule: text, required: true },
  auth: { rule: text, required: true },
} as const satisfies ObjectShape;

const SETTING_NAMES = new Set<string>(SETTINGS.map((s) => s.name));
/** Structured keys that only the config file can hold. */
const FILE_ONLY_KEYS = new Set(['providers', 'plans', 'prices']);

export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `Setting "config": cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'}).`,
    );
  }
  // A byte order mark (editors on Windows write one) is not part of the JSON.
  const parsed = parseJsonFile(text.startsWith('\uFEFF') ? text.slice(1) : text);
  if (!parsed.ok) throw new ConfigError(`Setting "config": ${path} is not valid JSON: ${parsed.problem}.`);
  if (typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
    throw new ConfigError(`Setting "config": ${path} must hold a JSON object of settings.`);
  }
  const obj = parsed.value as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!FILE_ONLY_KEYS.has(key) && !SETTING_NAMES.has(key)) {
      const hint = SETTING_NAMES.has(key.replaceAll('-', '_'))
        ? ` (did you mean "${key.replaceAll('-', '_')}"?)`
        : '';
      throw new ConfigError(`Config file ${path} has an unknown key "${key}"${hint}.`);
    }
  }
  return obj;
}

export function parseProviders(raw: unknown, path: string | undefined): Provider[] {
  if (raw === undefined) return [];
  const where = `key "providers" of ${path ?? 'the config file'}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(
      `${where} must be an object: {"<id>": {"base_url": "https://…", "auth": "bearer"}}.`,
    );
  }
  const out: Provider[] = [];
  for (const [id, value] of Object.entries(raw)) {
    if (!PROVIDER_ID_PATTERN.test(id)) {
      throw new ConfigError(
        `${where}: provider id "${id}" must be lower-case letters, digits and dashes (max 32).`,
      );
    }
    const checked = checkShape(value, FILE_PROVIDER_SHAPE);
    if (!checked.ok) {
      throw new ConfigError(
        `${where}: provider "${id}" ${describeProblem(checked.problem)}; expected {"base_url": "https://…", "auth": "bearer" | "header:<name>"}.`,
      );
    }
    const fields = checked.value;
    let url: URL;
    try {
      url = new URL(fields.base_url);
    } catch {
      throw new ConfigError(`${where}: provider "${id}" base_url is not a URL.`);
    }
    if (url.protocol !== 'https:') {
      throw new ConfigError(
        `${where}: provider "${id}" base_url must start with https:// (upstream is TLS only).`,
      );
    }
    if (url.search || url.hash || url.username || url.password) {
      throw new ConfigError(
        `${where}: provider "${id}" base_url must not carry a query, fragment or credentials.`,
      );
    }
    const auth = parseProviderAuth(fields.auth);
    if (!auth) {
      throw new ConfigError(
        `${where}: provider "${id}" auth "${fields.auth}" is not accepted; expected "bearer" or "header:<header-name>".`,
      );
    }
    const base = url.origin + url.pathname;
    out.push({ id, baseUrl: base.endsWith('/') ? base.slice(0, -1) : base, auth, builtin: false });
  }
  return out;
}
