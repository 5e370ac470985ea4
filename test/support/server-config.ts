import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig, type Config, type ConfigInput } from '../../src/config/load.js';
import type { MockProvider } from './mock-provider.js';

/**
 * The config of a server whose `openai` provider is the mock: the mock's CA and a config file naming
 * it are written into `dataDir`, and both listeners take free ports. `flags` and `env` add to that.
 */
export async function mockProviderConfig(
  dataDir: string,
  mock: MockProvider,
  more: { readonly flags?: ConfigInput['flags']; readonly env?: ConfigInput['env'] } = {},
): Promise<Config> {
  const caFile = path.join(dataDir, 'provider-ca.pem');
  await writeFile(caFile, mock.caCertPem);
  const configFile = path.join(dataDir, 'config.json');
  await writeFile(
    configFile,
    JSON.stringify({ providers: { openai: { base_url: mock.url, auth: 'bearer' } } }),
  );
  return loadConfig({
    flags: { data_dir: dataDir, api_port: '0', proxy_port: '0', provider_ca: caFile, ...more.flags },
    env: more.env ?? {},
    configFile,
  });
}
