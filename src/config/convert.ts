import { canonical, parseDuration } from '../rules/duration.js';
import type { SettingKind } from './settings.js';

export type Converted = { ok: true; value: string | number | boolean } | { ok: false; accepted: string };

/**
 * Turns one raw setting (a string from a flag or the environment, or any JSON value from the file)
 * into its typed value, or says what would have been accepted. Pure, so it is tested on tables.
 */
export function convertSetting(kind: SettingKind, raw: unknown): Converted {
  switch (kind.type) {
    case 'string': {
      const accepted = kind.accepted ?? 'a non-empty string';
      if (typeof raw !== 'string' || raw === '') return { ok: false, accepted };
      if (kind.pattern && !kind.pattern.test(raw)) return { ok: false, accepted };
      return { ok: true, value: raw };
    }
    case 'path':
      if (typeof raw !== 'string' || raw.trim() === '' || raw.includes('\0')) {
        return { ok: false, accepted: 'a file system path' };
      }
      return { ok: true, value: raw };
    case 'count_or_auto': {
      const accepted = `a whole number from 1 to ${kind.max}, or auto (${kind.auto ?? 'one per CPU'})`;
      if (raw === 'auto') return { ok: true, value: 'auto' };
      const n =
        typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
      if (!Number.isInteger(n) || n < 1 || n > kind.max) return { ok: false, accepted };
      return { ok: true, value: n };
    }
    case 'port': {
      const accepted = 'an integer port from 0 to 65535 (0 picks a free port)';
      const n =
        typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
      if (!Number.isInteger(n) || n < 0 || n > 65535) return { ok: false, accepted };
      return { ok: true, value: n };
    }
    case 'boolean': {
      if (typeof raw === 'boolean') return { ok: true, value: raw };
      if (typeof raw === 'string') {
        const s = raw.toLowerCase();
        if (s === 'true' || s === '1' || s === 'yes') return { ok: true, value: true };
        if (s === 'false' || s === '0' || s === 'no') return { ok: true, value: false };
      }
      // Text (a flag, the environment) may also say 1/0 or yes/no; a JSON file says true or false.
      return {
        ok: false,
        accepted:
          typeof raw === 'string' ? 'true or false (also 1/0, yes/no)' : 'true or false (a JSON boolean)',
      };
    }
    case 'duration': {
      const bounded = kind.min !== undefined || kind.max !== undefined;
      const accepted = bounded
        ? `a duration from ${canonical(kind.min ?? 0)} to ${kind.max === undefined ? 'any length' : canonical(kind.max)}, such as 10s`
        : 'a duration such as 500ms, 10s, 5m or 1h';
      if (typeof raw !== 'string') return { ok: false, accepted };
      const parsed = parseDuration(raw);
      if (!parsed.ok) return { ok: false, accepted };
      if (parsed.ms < (kind.min ?? 0) || parsed.ms > (kind.max ?? Infinity)) return { ok: false, accepted };
      return { ok: true, value: parsed.ms };
    }
    case 'number': {
      const accepted = `${kind.integer ? 'a whole number' : 'a number'} from ${kind.min} to ${kind.max}`;
      const n =
        typeof raw === 'number'
          ? raw
          : typeof raw === 'string' && /^\d+(\.\d+)?$/.test(raw.trim())
            ? Number(raw.trim())
            : NaN;
      if (!Number.isFinite(n) || n < kind.min || n > kind.max || (kind.integer && !Number.isInteger(n))) {
        return { ok: false, accepted };
      }
      return { ok: true, value: n };
    }
    case 'enum':
      if (typeof raw !== 'string' || !kind.values.includes(raw)) {
        return { ok: false, accepted: `one of ${kind.values.join(', ')}` };
      }
      return { ok: true, value: raw };
    case 'url': {
      const accepted = `a URL starting with ${kind.protocols.map((p) => `${p}//`).join(' or ')}`;
      if (typeof raw !== 'string') return { ok: false, accepted };
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        return { ok: false, accepted };
      }
      if (!kind.protocols.includes(url.protocol) || url.hostname === '') return { ok: false, accepted };
      return { ok: true, value: raw };
    }
  }
}
