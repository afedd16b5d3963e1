import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * PDQ blocklist entries (issue 31 part 4; API.md Moderation, Blocklist): an entry's 256-bit PDQ hash (64 hex), and
 * its sixteen 16-bit chunks as rows keyed `position × 65 536 + value` (similarity/pdq-hamming.ts): a lookup at
 * distance ≤ 31 reads the 272 keys within one bit of the upload's chunks from one index, then verifies the
 * candidates' distance. `entry_key` grows to hold `sha256:phash:pdq` (entries without a PDQ keep their key).
 * The stored uploads' PDQ (m012) has no index: the hold job scans them once per step (blocklist.repository.ts).
 */
export class M016PdqBlocklist extends Migration {
  override name = 'm016-pdq-blocklist';

  override up(): void {
    const pg = isPostgres(this.config);
    const uuid = pg ? 'uuid' : 'text';
    this.addSql('alter table blocklist add column pdq varchar(64) null');
    if (pg) this.addSql('alter table blocklist alter column entry_key type varchar(160)');
    this.addSql(`create table blocklist_pdq_chunks (
      chunk integer not null,
      entry_id ${uuid} not null references blocklist (id) on delete cascade,
      primary key (chunk, entry_id))${pg ? '' : ' without rowid'}`);
    this.addSql('create index blocklist_pdq_chunks_entry_index on blocklist_pdq_chunks (entry_id)');
  }
}
