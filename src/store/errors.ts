/**
 * Errors the store raises. The API layer turns them into TokenProxyError codes; the store itself
 * knows nothing of HTTP.
 */

/** The database cannot be reached or answered with a connection-level failure. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

export class StorePlanLimitError extends Error {
  constructor(readonly limit: number) {
    super(`the plan allows ${limit} active tokens`);
    this.name = 'StorePlanLimitError';
  }
}

export class StoreNotFoundError extends Error {
  constructor(readonly what: 'key' | 'account') {
    super(`${what} not found`);
    this.name = 'StoreNotFoundError';
  }
}

export class StoreConflictError extends Error {
  constructor(readonly reason: 'key_deleted' | 'provider_mismatch' | 'token_not_active') {
    super(reason);
    this.name = 'StoreConflictError';
  }
}
