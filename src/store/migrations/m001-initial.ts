import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * The whole schema, written by hand per database so that indexes say exactly what the queries need:
 * partial indexes over public uploads for every feed order, the four perceptual-hash chunks for
 * multi-index hashing, and (SQLite only) the sqlite-vec table for Hamming KNN.
 */
export class M001Initial extends Migration {
  override name = 'm001-initial';

  override up(): void {
    const pg = isPostgres(this.config);
    const uuid = pg ? 'uuid' : 'text';
    const ts = pg ? 'timestamptz(3)' : 'datetime';
    const bool = pg ? 'boolean' : 'integer';
    const dbl = pg ? 'double precision' : 'double';
    const json = pg ? 'jsonb' : 'json';
    const falseLit = pg ? 'false' : '0';

    this.addSql(`create table users (
      id ${uuid} not null primary key,
      username varchar(32) not null,
      username_key varchar(32) not null,
      email varchar(254) not null,
      email_key varchar(254) not null,
      password_hash varchar(255) not null,
      role varchar(8) not null default 'user',
      created_at ${ts} not null)`);
    this.addSql('create unique index users_username_key_unique on users (username_key)');
    this.addSql('create unique index users_email_key_unique on users (email_key)');

    this.addSql(`create table api_tokens (
      id ${uuid} not null primary key,
      user_id ${uuid} not null references users (id) on delete cascade,
      name varchar(100) not null,
      token_hash varchar(64) not null,
      created_at ${ts} not null,
      last_used_at ${ts} null)`);
    this.addSql('create unique index api_tokens_token_hash_unique on api_tokens (token_hash)');
    this.addSql('create index api_tokens_user_index on api_tokens (user_id, created_at)');

    this.addSql(`create table tags (
      id ${uuid} not null primary key,
      name varchar(32) not null,
      slug varchar(32) not null,
      upload_count integer not null default 0,
      created_at ${ts} not null)`);
    this.addSql('create unique index tags_name_unique on tags (name)');
    this.addSql('create unique index tags_slug_unique on tags (slug)');

    this.addSql(`create table uploads (
      id ${uuid} not null primary key,
      user_id ${uuid} not null references users (id) on delete cascade,
      upload_type varchar(8) not null,
      filename varchar(64) null,
      original_name varchar(255) null,
      description text not null default '',
      external_url text null,
      source_url text null,
      upvotes integer not null default 0,
      downvote_count integer not null default 0,
      score integer not null default 0,
      hot_rank ${dbl} not null default 0,
      best_rank ${dbl} not null default 0,
      is_private ${bool} not null default ${falseLit},
      created_at ${ts} not null,
      sha256 varchar(64) null,
      phash varchar(16) null,
      ph0 integer null,
      ph1 integer null,
      ph2 integer null,
      ph3 integer null,
      media_key varchar(36) null,
      width integer null,
      height integer null,
      animated ${bool} null,
      original_format varchar(8) null,
      thumbhash varchar(64) null,
      human_score ${dbl} null,
      variants ${json} null)`);
    const pub = `where is_private = ${falseLit}`;
    this.addSql(`create index uploads_public_new_index on uploads (created_at desc, id desc) ${pub}`);
    this.addSql(`create index uploads_public_top_index on uploads (score desc, created_at desc) ${pub}`);
    this.addSql(`create index uploads_public_hot_index on uploads (hot_rank desc, created_at desc) ${pub}`);
    this.addSql(`create index uploads_public_best_index on uploads (best_rank desc, created_at desc) ${pub}`);
    this.addSql(`create index uploads_public_type_index on uploads (upload_type, created_at desc) ${pub}`);
    this.addSql('create index uploads_user_created_index on uploads (user_id, created_at desc)');
    this.addSql('create index uploads_sha256_index on uploads (sha256, created_at)');
    // One user never stores the same bytes twice, even when two identical uploads race.
    this.addSql('create unique index uploads_user_sha256_unique on uploads (user_id, sha256)');
    this.addSql('create index uploads_media_key_index on uploads (media_key)');
    for (const c of ['ph0', 'ph1', 'ph2', 'ph3']) {
      this.addSql(`create index uploads_${c}_index on uploads (${c})`);
    }

    this.addSql(`create table upload_tags (
      upload_id ${uuid} not null references uploads (id) on delete cascade,
      tag_id ${uuid} not null references tags (id) on delete cascade,
      created_at ${ts} not null,
      primary key (upload_id, tag_id))`);
    this.addSql('create index upload_tags_tag_index on upload_tags (tag_id, upload_id)');

    this.addSql(`create table votes (
      user_id ${uuid} not null references users (id) on delete cascade,
      upload_id ${uuid} not null references uploads (id) on delete cascade,
      value smallint not null,
      created_at ${ts} not null,
      updated_at ${ts} not null,
      primary key (user_id, upload_id))`);
    this.addSql('create index votes_upload_index on votes (upload_id)');

    this.addSql(`create table idempotency_keys (
      user_id ${uuid} not null references users (id) on delete cascade,
      key varchar(255) not null,
      request_hash varchar(64) not null,
      status integer null,
      body text null,
      created_at ${ts} not null,
      primary key (user_id, key))`);
    this.addSql('create index idempotency_keys_created_index on idempotency_keys (created_at)');

    if (!pg) {
      // Hamming KNN over the 64-bit perceptual hashes (sqlite-vec, loaded when the connection opens).
      this.addSql('create virtual table upload_phash_vec using vec0(upload_id text primary key, hash bit[64])');
    }
  }
}
