/**
 * Which methods a path answers to, for the 405 `Allow` header: a request that found no route may
 * still name a known path with the wrong method (`PUT /v1/tokens/tok_…`), and "No route" would
 * send the caller looking for a path that exists.
 */
export class RouteMethods {
  private readonly routes: { readonly pattern: RegExp; readonly methods: Set<string> }[] = [];

  /** `url` as registered with Fastify: `/v1/tokens/:id`; wildcards (`*`) match the rest of the path. */
  add(method: string | readonly string[], url: string): void {
    const source = url
      .split('/')
      .map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : escapeRegExp(part)))
      .join('/');
    const key = `^${source}$`;
    let route = this.routes.find((r) => r.pattern.source === key);
    if (route === undefined) {
      route = { pattern: new RegExp(key), methods: new Set() };
      this.routes.push(route);
    }
    for (const m of typeof method === 'string' ? [method] : method) route.methods.add(m.toUpperCase());
  }

  /** The methods `path` (no query) answers to, sorted; empty when the path is unknown. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes) {
      if (route.pattern.test(path)) for (const m of route.methods) methods.add(m);
    }
    return [...methods].sort();
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
