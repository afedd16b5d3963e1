import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * An Idempotency-Key claim is held by a token under a short lease that its holder renews: a process that
 * dies stops renewing, and a retry takes the key over within seconds (it used to wait two minutes). The
 * token fences the holder's writes: a holder that lost its claim cannot record a result over the new one.
 * Rows from before have neither and are read with the old two-minute rule.
 */
export class M006IdempotencyLeases extends Migration {
  override name = 'm006-idempotency-leases';

  override up(): void {
    const ts = isPostgres(this.config) ? 'timestamptz(3)' : 'datetime';
    this.addSql('alter table idempotency_keys add column claim_token varchar(36) null');
    this.addSql(`alter table idempotency_keys add column lease_until ${ts} null`);
  }
}
