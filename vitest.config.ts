import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Under CI (TOKENPROXY_TEST_REQUIRE_SERVICES=1) a missing PostgreSQL, Chromium, SoftHSM2, Redis
    // or Python fails the run instead of skipping the suites that need it.
    globalSetup: ['test/support/required-services.ts'],
    // Tests start real servers, databases and browsers: give them room, and keep files isolated.
    pool: 'forks',
    // Two files at a time whatever the machine: most files spend their time waiting on real servers,
    // leases and timers, so two halve the suite on CI's 2 cores (Vitest's default there is one).
    // Fixed rather than per core so every machine runs the configuration CI runs.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
