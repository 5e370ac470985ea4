import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import pg from 'pg';

/**
 * Vitest's global setup. Suites whose service is missing skip on a developer's machine (plain
 * `npm test` without PostgreSQL or Chromium still runs the rest), but CI sets
 * TOKENPROXY_TEST_REQUIRE_SERVICES=1 (.ci/run): there a missing service fails the run at once, by
 * name, instead of turning whole areas (the PostgreSQL and cluster suites, the browser suites) into
 * skips that a green run would hide.
 */
export default async function requireServices(): Promise<void> {
  if (process.env.TOKENPROXY_TEST_REQUIRE_SERVICES !== '1') return;
  const missing: string[] = [];
  const url = process.env.TEST_DATABASE_URL ?? '';
  if (url === '') missing.push('PostgreSQL: TEST_DATABASE_URL is not set');
  else {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
    } catch (error) {
      missing.push(
        `PostgreSQL: ${url} does not answer (${error instanceof Error ? error.message : String(error)})`,
      );
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  // Fixed paths: the suites use exactly these (test/support/chromium.ts, test/kek/softhsm.ts).
  if (!existsSync('/usr/bin/chromium')) missing.push('Chromium: /usr/bin/chromium (Debian package chromium)');
  if (!existsSync('/usr/lib/softhsm/libsofthsm2.so'))
    missing.push('SoftHSM2: /usr/lib/softhsm/libsofthsm2.so (softhsm2)');
  for (const [command, pkg] of [
    ['redis-server', 'redis-server'],
    ['python3', 'python3'],
    ['h2load', 'nghttp2-client'],
  ] as const) {
    try {
      execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    } catch {
      missing.push(`${command} (Debian package ${pkg})`);
    }
  }
  if (missing.length > 0) {
    throw new Error(
      `TOKENPROXY_TEST_REQUIRE_SERVICES=1, and what these suites need is missing:\n  ${missing.join('\n  ')}\n` +
        'Install or start it (.ci/run does both), or unset the variable to let those suites skip.',
    );
  }
}
