import { describe, expect, it } from 'vitest';
import { errorSummary } from '../../src/errors/summary.js';
import {
  StoreConflictError,
  StoreMigrationError,
  StoreNotFoundError,
  StorePlanLimitError,
  StoreTooNewError,
  StoreUnavailableError,
} from '../../src/store/errors.js';

describe('store errors', () => {
  it.each([
    [new StoreUnavailableError('down'), 'StoreUnavailableError', 'store_unavailable'],
    [new StorePlanLimitError(3), 'StorePlanLimitError', 'store_plan_limit'],
    [new StoreNotFoundError('key'), 'StoreNotFoundError', 'store_not_found'],
    [new StoreConflictError('key_deleted'), 'StoreConflictError', 'store_conflict'],
    [new StoreTooNewError('0099_x'), 'StoreTooNewError', 'store_too_new'],
    [new StoreMigrationError('0001_initial', 'no'), 'StoreMigrationError', 'store_migration_failed'],
  ])('%s carries a stable code, which a log line shows', (error, name, code) => {
    expect(error.code).toBe(code);
    expect(errorSummary(error)).toEqual({ name, code });
  });

  it('a failed migration is named in the message, with the database’s reason', () => {
    expect(new StoreMigrationError('0003_events', 'disk full').message).toBe(
      'database migration 0003_events failed: disk full',
    );
    expect(new StoreMigrationError(undefined, 'disk full').message).toBe(
      'database migrations failed: disk full',
    );
  });
});
