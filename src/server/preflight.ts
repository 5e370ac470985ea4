import { lookup } from 'node:dns/promises';
import { readFile } from 'node:fs/promises';
import { createServer, isIP } from 'node:net';
import { X509Certificate } from 'node:crypto';
import { ConfigError } from '../config/config-error.js';
import type { Config } from '../config/load.js';
import { checkMasterKeyForm, MASTER_KEY_ENV } from '../vault/local-kek.js';
import { describeFsError } from './data-dir.js';
import { servingRefusal } from './instance-lock.js';

/**
 * Checks of settings that need the file system or the resolver, run before anything is written:
 * a start that would fail later (after printing an API key, say) fails here instead, naming the setting.
 */
export async function preflight(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  await checkHost(config.host);
  if (config.providerCa !== undefined) await checkProviderCa(config.providerCa);
  if (config.redisCa !== undefined) await checkProviderCa(config.redisCa, 'redis_ca', 'your Redis server');
  // A master key that is not one; whether it is this store's is checked once the store is open.
  if (config.kek === 'local') checkMasterKeyForm(env[MASTER_KEY_ENV]);
}

async function checkHost(host: string): Promise<void> {
  if (isIP(host) !== 0) return;
  try {
    await lookup(host);
  } catch (error) {
    throw new ConfigError(
      `setting host: "${host}" is not an IP address and does not resolve (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'}). ` +
        'Give an address of this machine with --host or TOKENPROXY_HOST, e.g. 127.0.0.1, 0.0.0.0 or ::',
    );
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

export async function checkProviderCa(
  file: string,
  setting = 'provider_ca',
  peer = 'your provider',
): Promise<void> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      `setting ${setting}: cannot read ${file} (${describeFsError(error)}); give the path of a PEM file ` +
        `holding the CA certificate(s) that signed ${peer}’s certificate`,
    );
  }
  const blocks = text.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    throw new ConfigError(
      `setting ${setting}: ${file} holds no PEM certificate (a "-----BEGIN CERTIFICATE-----" block); ` +
        'convert a DER file with `openssl x509 -inform der -in ca.der -out ca.pem`',
    );
  }
  blocks.forEach((block, index) => {
    try {
      new X509Certificate(block);
    } catch {
      throw new ConfigError(
        `setting ${setting}: certificate ${index + 1} of ${blocks.length} in ${file} is not a valid X.509 certificate`,
      );
    }
  });
}

/**
 * Both ports are tried (bound and let go) before anything is written: a busy port, or a host that is
 * not this machine's, would otherwise stop the start only after a new data dir had its store, master
 * key and certificate. The real bind comes later (DESIGN §13's order) and can still lose a race for
 * the port; what it refuses is then named the same way. Port 0 is tried too, for the host's sake.
 */
export async function checkPortsFree(
  config: Pick<Config, 'host' | 'proxyPort' | 'apiPort' | 'dataDir'>,
): Promise<void> {
  for (const [setting, port] of [
    ['proxy_port', config.proxyPort],
    ['api_port', config.apiPort],
  ] as const) {
    await new Promise<void>((resolve, reject) => {
      const probe = createServer();
      // The usual holder of a busy port is a serve already running on this data dir: named if so.
      probe.once('error', (err) => {
        void servingRefusal(config.dataDir).then((serving) =>
          reject(serving ?? bindError(err, setting, config.host, port)),
        );
      });
      // exclusive: in a process of node:cluster the probe must not borrow the primary's handle.
      probe.listen({ host: config.host, port, exclusive: true }, () => probe.close(() => resolve()));
    });
  }
}

/** A listener that cannot bind: the message names the setting that chose the address and what to do. */
export function bindError(
  error: unknown,
  setting: 'api_port' | 'proxy_port',
  host: string,
  port: number,
): Error {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const flag = `--${setting.replace('_', '-')}`;
  switch (code) {
    case 'EADDRINUSE':
      return new ConfigError(
        `setting ${setting}: port ${port} on ${host} is already in use by another process. ` +
          `Stop that process, or choose another port with ${flag}.`,
      );
    case 'EACCES':
      return new ConfigError(
        `setting ${setting}: this user may not listen on port ${port} (ports below 1024 need privileges). ` +
          `Choose a port above 1023 with ${flag}.`,
      );
    case 'EADDRNOTAVAIL':
      return new ConfigError(
        `setting host: ${host} is not an address of this machine. Give one of its addresses with --host, ` +
          'e.g. 127.0.0.1 or 0.0.0.0.',
      );
    default:
      return error instanceof Error ? error : new Error(String(error));
  }
}
