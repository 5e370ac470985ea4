/** What the proxy reports per request. Labels are bounded: provider id and status code only. */
export interface ProxyMetrics {
  /**
   * @param addedMs time the proxy itself spent on the request
   * @param upstreamMs time from sending upstream to the provider's response headers; null when not forwarded
   */
  observe(provider: string, status: number, addedMs: number, upstreamMs: number | null): void;
  /**
   * The proxy listener's open connections, read at each scrape (nothing per connection), and its
   * cap (`proxy_max_connections`; undefined: none).
   */
  watchConnections?(open: () => number, max: number | undefined): void;
  /** A connection was closed at accept because the listener held its cap. */
  connectionRefused?(): void;
}
