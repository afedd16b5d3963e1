import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Provenance (issue 50): what the reader found in an image's original bytes at upload (C2PA manifest, IPTC
 * `DigitalSourceType`), `{"ai_generated", "source_type", "c2pa"}` as API.md's "Provenance" says; JSON as `variants`
 * is (json on SQLite, jsonb on PostgreSQL). Null for links, for images processed before this migration and under
 * `AI_POLICY=off` (nothing read is kept).
 *
 * `ai_label`: the label listings filter on (`ai=exclude|only`): `marker` when a marker in the file says generated,
 * `owner` when the owner marked it by hand, null otherwise. The labelled uploads are few, like links (m013): each
 * order gets a partial index of its own over the listed, labelled rows, so `ai=only` reads a page of them from it;
 * `ai=exclude` reads the public indexes and skips the labelled ones (as `type=image` skips the links).
 */
export class M029Provenance extends Migration {
  override name = 'm029-provenance';

  override up(): void {
    const pg = isPostgres(this.config);
    this.addSql(`alter table uploads add column provenance ${pg ? 'jsonb' : 'json'} null`);
    this.addSql('alter table uploads add column ai_label varchar(8) null');
    const listed = `where is_private = ${pg ? 'false' : '0'} and moderation = 'visible' and ai_label is not null`;
    for (const [name, cols] of [
      ['new', 'created_at desc, id desc'],
      ['top', 'score desc, created_at desc, id desc'],
      ['hot', 'hot_rank desc, created_at desc, id desc'],
      ['best', 'best_rank desc, created_at desc, id desc'],
    ] as const) {
      this.addSql(`create index uploads_ai_${name}_index on uploads (${cols}) ${listed}`);
    }
  }
}
