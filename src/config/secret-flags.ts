import type { Config } from './load.js';
import type { SettingName } from './settings.js';

type Checked = Pick<Config, 'sources' | 'database' | 'redis' | 'smtpUrl'>;

/**
 * The secret settings given as command-line flags, where the process list (`ps`, /proc) shows them
 * to every user of the machine, for as long as the server runs. A URL counts only when it holds a
 * password (in its user part, or as `?password=`): `--redis redis://cache:6379` gives nothing away.
 */
export function secretsOnCommandLine(config: Checked): SettingName[] {
  const found: SettingName[] = [];
  if (config.sources.pkcs11_pin === 'flag') found.push('pkcs11_pin');
  const urls: ReadonlyArray<readonly [SettingName, string | undefined]> = [
    ['database', config.database],
    ['redis', config.redis],
    ['smtp_url', config.smtpUrl],
  ];
  for (const [name, value] of urls) {
    if (config.sources[name] === 'flag' && value !== undefined && holdsPassword(value)) found.push(name);
  }
  return found;
}

function holdsPassword(url: string): boolean {
  try {
    const parsed = new URL(url);
    // PostgreSQL also takes the password as a query parameter.
    return parsed.password !== '' || parsed.searchParams.has('password');
  } catch {
    return false;
  }
}
