import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Resumable uploads (tus 1.0, issue 49): one row per upload in progress, so any gateway continues what another
 * began (the bytes are a file under DATA_DIR/resumable). Counted per user while receiving (RESUMABLE_MAX_OPEN),
 * swept past `expires_at` (RESUMABLE_TTL).
 */
export class M028ResumableUploads extends Migration {
  override name = 'm028-resumable-uploads';

  override up(): void {
    const pg = isPostgres(this.config);
    const ts = pg ? 'timestamptz(3)' : 'datetime';
    const uuid = pg ? 'uuid' : 'text';
    this.addSql(`create table resumable_uploads (
      id varchar(36) not null primary key,
      user_id ${uuid} not null references users (id) on delete cascade,
      length integer not null,
      received integer not null,
      fields text not null,
      idempotency_key varchar(255) null,
      status varchar(16) not null,
      result_status integer null,
      result_body text null,
      created_at ${ts} not null,
      expires_at ${ts} not null,
      lease_until ${ts} null)`);
    this.addSql('create index resumable_uploads_user_status_index on resumable_uploads (user_id, status)');
    this.addSql('create index resumable_uploads_expires_at_index on resumable_uploads (expires_at)');
    this.addSql(
      'create unique index resumable_uploads_user_key_unique on resumable_uploads (user_id, idempotency_key)',
    );
  }
}
