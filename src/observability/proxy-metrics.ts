/** What the proxy reports per request. Labels are bounded: provider id and status code only. */
export interface ProxyMetrics {
  /**
   * @param addedMs time the proxy itself spent on the request
   * @param upstreamMs time from sending upstream to the provider's response headers; null when not forwarded
   */
  observe(provider: string, status: number, addedMs: number, upstreamMs: number | null): void;
}
