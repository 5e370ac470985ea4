import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));

// Built into dist/dashboard/ by `npm run build` (and so by `npm ci`, through `prepare`); served by
// the management listener (src/api/dashboard-assets.ts). Hashed asset names, no inline scripts.
export default defineConfig({
  root: here,
  base: '/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: path.resolve(here, '../dist/dashboard'),
    emptyOutDir: true,
    assetsDir: 'assets',
    // Everything is served from tokenproxy itself; no data: URL may be needed under the CSP.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
});
