import { Migration } from '@mikro-orm/migrations';

/**
 * PDQ (issue 31 part 4, the blocklist's shared hashes): an image upload's 256-bit PDQ hash as 64 hex characters,
 * as the reference prints it, and its quality (0–100; a match ignores hashes of quality < 50). Null for links and
 * for uploads stored before this migration. Same SQL on both databases.
 */
export class M012Pdq extends Migration {
  override name = 'm012-pdq';

  override up(): void {
    this.addSql('alter table uploads add column pdq varchar(64) null');
    this.addSql('alter table uploads add column pdq_quality integer null');
  }
}
