import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import type { ApiServer } from './context.js';

/**
 * The dashboard (DESIGN §12): the Vite build in dist/dashboard/ (made by `npm run build`, which
 * `prepare` runs on `npm ci`), read into memory once and served at `/` of the management listener.
 * Asset names carry a content hash, so they are cached for a year; the HTML is never cached, so a
 * new version is picked up on the next load.
 */

/** Both src/api (tests) and dist/api (the package) sit two levels under the repository root. */
const BUILD_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/dashboard');

/** The dashboard's views, each its own address so a link (the breach e-mail's) opens that view. */
export const DASHBOARD_PAGES = ['/', '/tokens', '/anomalies', '/logs', '/keys', '/webhooks', '/settings'];

/** On every page and asset: nothing from other origins, no inline script, no framing, no referrer. */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

interface Asset {
  readonly body: Buffer;
  readonly type: string;
}

function loadBuild(dir: string): { html: Buffer; assets: Map<string, Asset> } | undefined {
  const index = path.join(dir, 'index.html');
  if (!existsSync(index)) return undefined;
  const assets = new Map<string, Asset>();
  const assetDir = path.join(dir, 'assets');
  if (existsSync(assetDir)) {
    for (const name of readdirSync(assetDir)) {
      const type = TYPES[path.extname(name)];
      if (type !== undefined) assets.set(name, { body: readFileSync(path.join(assetDir, name)), type });
    }
  }
  return { html: readFileSync(index), assets };
}

export function dashboardRoutes(app: ApiServer, buildDir: string = BUILD_DIR): void {
  const build = loadBuild(buildDir);
  const secure = (reply: FastifyReply) => reply.headers(DASHBOARD_HEADERS);

  for (const page of DASHBOARD_PAGES) {
    app.get(page, { schema: { hide: true } }, (_request, reply) => {
      secure(reply).header('cache-control', 'no-cache');
      if (build === undefined) {
        return reply
          .code(503)
          .type('text/plain; charset=utf-8')
          .send('The dashboard is not built. Run "npm run build" (npm ci does it) and restart tokenproxy.\n');
      }
      return reply.type('text/html; charset=utf-8').send(build.html);
    });
  }

  // A view's address typed or linked with a trailing slash ("/tokens/") opens the view, query and
  // all, instead of a bare 404: the address is what the breach e-mail and bookmarks carry.
  for (const page of DASHBOARD_PAGES) {
    if (page === '/') continue;
    app.get(`${page}/`, { schema: { hide: true } }, (request, reply) => {
      const query = request.url.indexOf('?');
      secure(reply).header('cache-control', 'no-cache');
      return reply.redirect(query === -1 ? page : page + request.url.slice(query), 308);
    });
  }

  app.get<{ Params: { name: string } }>('/assets/:name', { schema: { hide: true } }, (request, reply) => {
    const asset = build?.assets.get(request.params.name);
    secure(reply);
    if (asset === undefined) {
      return reply
        .code(404)
        .header('cache-control', 'no-cache')
        .type('text/plain; charset=utf-8')
        .send('Not found.\n');
    }
    return reply
      .header('cache-control', 'public, max-age=31536000, immutable')
      .type(asset.type)
      .send(asset.body);
  });
}
