import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Media files whose last upload was deleted: written in the delete's transaction, removed once the
 * files are gone. A crash between the commit and the unlink leaves the key here, and the next sweep
 * finishes the job — so no file outlives its last row, without scanning the media directory.
 */
export class M002MediaGarbage extends Migration {
  override name = 'm002-media-garbage';

  override up(): void {
    const ts = isPostgres(this.config) ? 'timestamptz(3)' : 'datetime';
    this.addSql(`create table media_garbage (media_key varchar(36) not null primary key, created_at ${ts} not null)`);
  }
}
