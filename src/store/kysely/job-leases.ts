import type { JobLeaseRepo } from '../store.js';
import type { RepoContext } from './context.js';

export class KyselyJobLeaseRepo implements JobLeaseRepo {
  constructor(private readonly ctx: RepoContext) {}

  async acquire(name: string, holder: string, now: string, until: string): Promise<boolean> {
    // One upsert, atomic on both databases: the update happens only where the lease is ours or
    // has run out, and RETURNING tells whether it did.
    const row = await this.ctx.db
      .insertInto('job_leases')
      .values({ name, holder, lease_until: until })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet({ holder, lease_until: until })
          .where((eb) =>
            eb.or([eb('job_leases.holder', '=', holder), eb('job_leases.lease_until', '<=', now)]),
          ),
      )
      .returning('holder')
      .executeTakeFirst();
    return row?.holder === holder;
  }

  async purgeExpired(now: string): Promise<number> {
    const result = await this.ctx.db
      .deleteFrom('job_leases')
      .where('lease_until', '<=', now)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async release(name: string, holder: string): Promise<void> {
    await this.ctx.db
      .deleteFrom('job_leases')
      .where('name', '=', name)
      .where('holder', '=', holder)
      .execute();
  }
}
