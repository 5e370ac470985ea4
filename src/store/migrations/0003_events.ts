import type { Kysely } from 'kysely';
import type { DialectName } from '../dialect.js';

/**
 * Webhook endpoints, events and the delivery outbox. An event and its delivery rows are written in
 * the transaction of the change that caused it, so a committed change always has its deliveries, and
 * a crash between commit and sending loses nothing. Deliveries are claimed with a lease
 * (`locked_until`) so several processes can share the outbox.
 */
export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const bytes = dialect === 'postgres' ? 'bytea' : 'blob';

  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id'))
    .addColumn('url', 'text', (col) => col.notNull())
    .addColumn('events', 'text', (col) => col.notNull())
    .addColumn('secret', bytes, (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('disabled_at', 'text')
    .addColumn('disabled_reason', 'text')
    .addColumn('failing_since', 'text')
    .execute();
  await db.schema
    .createIndex('webhooks_account_created_idx')
    .on('webhooks')
    .columns(['account_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('data', 'text', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('events_account_created_idx')
    .on('events')
    .columns(['account_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('events_account_type_created_idx')
    .on('events')
    .columns(['account_id', 'type', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('deliveries')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('event_id', 'text', (col) => col.notNull())
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('channel', 'text', (col) => col.notNull())
    .addColumn('webhook_id', 'text')
    .addColumn('email_to', 'text')
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text', (col) => col.notNull())
    .addColumn('locked_until', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('completed_at', 'text')
    .execute();
  await db.schema
    .createIndex('deliveries_due_idx')
    .on('deliveries')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('deliveries_webhook_idx')
    .on('deliveries')
    .columns(['webhook_id', 'status'])
    .execute();
  await db.schema.createIndex('deliveries_event_idx').on('deliveries').column('event_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['deliveries', 'events', 'webhooks']) {
    await db.schema.dropTable(table).execute();
  }
}
