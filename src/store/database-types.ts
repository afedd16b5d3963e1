/**
 * The database's tables, declared once, as Kysely reads and writes them: every query is `Kysely<DB>`, and the
 * row types of the repositories derive from these (`Selectable<UploadsTable>`, `Insertable<…>`).
 * `DB` is Kysely's usual name for it (`Database` is the handle of database.ts).
 *
 * The tables come from the hand-written migrations (migrations/), which create the columns the MikroORM
 * entities map (entities/); database-types.check.ts holds, at compile time, that each entity maps exactly the
 * columns its table declares here, and test/integration/schema.test.ts that both real databases have exactly
 * the columns of TABLE_COLUMNS below. The types say what the drivers give on BOTH databases:
 *
 *   - timestamps (`datetime`, `timestamptz(3)`): written and compared as `dialect.date(d)` (epoch milliseconds on
 *     SQLite, a Date on PostgreSQL); read back as epoch milliseconds (SQLite) or as text (PostgreSQL: MikroORM's
 *     connection leaves timestamps unparsed), through `dialect.readDate(v)`;
 *   - booleans (`integer` 0/1, `boolean`): written as `dialect.bool(b)`, read through `dialect.readBool(v)`;
 *   - JSON (`json` text, `jsonb`): written as a JSON string; read as that string on SQLite, parsed on PostgreSQL.
 *
 * Left out: the sqlite-vec table `upload_phash_vec` (SQLite only, a virtual table reached with raw SQL in
 * similarity/similarity-index.ts).
 */
import type { ColumnType, Generated, SqlBool } from 'kysely';
import type { ModerationState, UploadType, VariantInfo } from '../domain/uploads/upload.types.ts';

/**
 * A timestamp: bound as `dialect.date(d)` (epoch milliseconds on SQLite, a Date on PostgreSQL), read as epoch
 * milliseconds (SQLite) or text (PostgreSQL). Kysely types a comparison's operand with the read type, so that
 * one includes Date too.
 */
export type Timestamp = ColumnType<Date | number | string, Date | number, Date | number>;

/** A boolean as the drivers give it: 0 or 1 on SQLite, true or false on PostgreSQL. */
export type Bool = SqlBool;

/** A JSON column: written as a JSON string; read as that string (SQLite `json`) or parsed (PostgreSQL `jsonb`). */
export type Json<T> = ColumnType<T | string, string, string>;

export interface UsersTable {
  id: string;
  username: string;
  /** Lowercased username: unique case-insensitively on both databases. */
  username_key: string;
  email: string;
  email_key: string;
  password_hash: string;
  role: Generated<string>;
  created_at: Timestamp;
  /** Banned until then (far in the future for a permanent ban, see BAN_PERMANENT); null when not banned. */
  banned_until: Timestamp | null;
  ban_reason: string | null;
}

export interface ApiTokensTable {
  id: string;
  user_id: string;
  name: string;
  /** SHA-256 of the secret, hex. */
  token_hash: string;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
}

export interface TagsTable {
  id: string;
  name: string;
  slug: string;
  /** Listed (public) uploads carrying the tag (store/repositories/tag-links.ts). */
  upload_count: Generated<number>;
  created_at: Timestamp;
}

export interface UploadsTable {
  id: string;
  user_id: string;
  upload_type: UploadType;
  filename: string | null;
  original_name: string | null;
  description: Generated<string>;
  external_url: string | null;
  source_url: string | null;
  upvotes: Generated<number>;
  downvote_count: Generated<number>;
  /** upvotes − downvotes, for `sort=top`. */
  score: Generated<number>;
  hot_rank: Generated<number>;
  best_rank: Generated<number>;
  is_private: Generated<Bool>;
  created_at: Timestamp;
  sha256: string | null;
  phash: string | null;
  /** The perceptual hash's four 16-bit chunks, for multi-index hashing. */
  ph0: number | null;
  ph1: number | null;
  ph2: number | null;
  ph3: number | null;
  /** Name of the stored variant files; shared by uploads of identical bytes. */
  media_key: string | null;
  width: number | null;
  height: number | null;
  animated: Bool | null;
  original_format: string | null;
  thumbhash: string | null;
  human_score: number | null;
  variants: Json<Record<string, VariantInfo>> | null;
  /** `visible`, `held` or `removed` (API.md Moderation). */
  moderation: Generated<ModerationState>;
  /** Person detection scored it at or above the threshold (HUMAN_POLICY flag/hold) and no moderator approved it yet. */
  person_flag: Generated<Bool>;
  /** When a moderator (or an automatic rule) last acted on it: the closed queue's order. */
  moderated_at: Timestamp | null;
}

export interface UploadTagsTable {
  upload_id: string;
  tag_id: string;
  created_at: Timestamp;
}

export interface VotesTable {
  user_id: string;
  upload_id: string;
  /** +1 (fucks) or −1 (does_not_fuck). */
  value: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface IdempotencyKeysTable {
  user_id: string;
  key: string;
  request_hash: string;
  /** HTTP status of the stored response; null while the first request is still running. */
  status: number | null;
  body: string | null;
  created_at: Timestamp;
  claim_token: string | null;
  lease_until: Timestamp | null;
}

/** Stored files whose last upload was deleted, until they are removed (migration m002). */
export interface MediaGarbageTable {
  media_key: string;
  created_at: Timestamp;
}

/** Reports of uploads (migration m009): one per user and upload. */
export interface ReportsTable {
  id: string;
  upload_id: string;
  user_id: string;
  reason: string;
  note: string | null;
  /** `open` until a moderator approves or removes the upload. */
  status: Generated<'open' | 'closed'>;
  created_at: Timestamp;
  closed_at: Timestamp | null;
}

/** The moderators' blocklist of hashes, with the perceptual hash's chunks for multi-index hashing. */
export interface BlocklistTable {
  id: string;
  sha256: string | null;
  phash: string | null;
  ph0: number | null;
  ph1: number | null;
  ph2: number | null;
  ph3: number | null;
  /** `sha256:phash` (either may be empty): unique, so an entry is added once. */
  entry_key: string;
  reason: Generated<string>;
  source: 'moderation' | 'import';
  created_at: Timestamp;
}

/** Blocklist entries whose matches among stored uploads are still to be held (the background job's to-do list). */
export interface BlocklistPendingTable {
  entry_id: string;
  created_at: Timestamp;
  /** The `blocklist_hold` job whose progress counts this entry (null: queued before m010). */
  job_id: string | null;
}

/** One row (id 1): bumped by every blocklist addition, read by an upload before its checks and in its insert. */
export interface BlocklistVersionTable {
  id: number;
  /** bigint: a string on PostgreSQL. */
  version: ColumnType<number | string, number | undefined, number>;
}

/** Durable moderation jobs (ban removals, blocklist holds): claimed with a lease, with their progress. */
export interface ModerationJobsTable {
  id: string;
  kind: 'ban_removal' | 'blocklist_hold';
  status: Generated<'queued' | 'running' | 'done' | 'failed'>;
  target_type: 'user' | 'blocklist';
  /** The banned user; null for a blocklist hold (its entries are in blocklist_pending). */
  target_id: string | null;
  reason: Generated<string>;
  moderator_id: string | null;
  moderator_name: string | null;
  done: Generated<number>;
  total: Generated<number>;
  /** Runs that failed (an error, not a crash); the job fails for good after a few. */
  attempts: Generated<number>;
  error: string | null;
  lease_owner: string | null;
  lease_until: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The public modlog: append-only (triggers refuse updates and deletes). */
export interface ModlogTable {
  id: string;
  at: Timestamp;
  action: string;
  target_type: string;
  target_id: string;
  reason: Generated<string>;
  /** Null for automatic actions. */
  moderator_id: string | null;
  moderator_name: string | null;
}

/** The queue's vote-ring items (migration m011): accounts and evidence as JSON text. */
export interface VoteRingsTable {
  id: string;
  /** SHA-256 of target, direction and sorted accounts: unique among open items. */
  ring_key: string;
  /** `type:id:direction` of the ring's target. */
  target_key: string;
  status: Generated<'open' | 'closed'>;
  /** JSON array of user ids. */
  accounts: string;
  /** JSON object: the evidence as the queue shows it. */
  evidence: string;
  created_at: Timestamp;
  closed_at: Timestamp | null;
  closed_by: string | null;
  action: 'void' | 'dismiss' | null;
  reason: string | null;
  voided_votes: number | null;
}

/** MikroORM's record of the migrations applied. */
export interface SchemaMigrationsTable {
  id: Generated<number>;
  name: string;
  /** Set by the database (a default). */
  executed_at: ColumnType<Date | number | string, Date | number | undefined, Date | number>;
}

export interface DB {
  users: UsersTable;
  api_tokens: ApiTokensTable;
  tags: TagsTable;
  uploads: UploadsTable;
  upload_tags: UploadTagsTable;
  votes: VotesTable;
  idempotency_keys: IdempotencyKeysTable;
  media_garbage: MediaGarbageTable;
  reports: ReportsTable;
  blocklist: BlocklistTable;
  blocklist_pending: BlocklistPendingTable;
  moderation_jobs: ModerationJobsTable;
  blocklist_version: BlocklistVersionTable;
  modlog: ModlogTable;
  vote_rings: VoteRingsTable;
  schema_migrations: SchemaMigrationsTable;
}

/** Every column of a table, named once each: the compiler refuses a missing or unknown one. */
const columns = <T>(names: Record<keyof T & string, true>) => Object.keys(names) as Array<keyof T & string>;

/** The columns of each table, for the test that compares them with both real databases. */
export const TABLE_COLUMNS: { readonly [T in keyof DB]: ReadonlyArray<keyof DB[T] & string> } = {
  users: columns<UsersTable>({
    id: true,
    username: true,
    username_key: true,
    email: true,
    email_key: true,
    password_hash: true,
    role: true,
    created_at: true,
    banned_until: true,
    ban_reason: true,
  }),
  api_tokens: columns<ApiTokensTable>({
    id: true,
    user_id: true,
    name: true,
    token_hash: true,
    created_at: true,
    last_used_at: true,
  }),
  tags: columns<TagsTable>({ id: true, name: true, slug: true, upload_count: true, created_at: true }),
  uploads: columns<UploadsTable>({
    id: true,
    user_id: true,
    upload_type: true,
    filename: true,
    original_name: true,
    description: true,
    external_url: true,
    source_url: true,
    upvotes: true,
    downvote_count: true,
    score: true,
    hot_rank: true,
    best_rank: true,
    is_private: true,
    created_at: true,
    sha256: true,
    phash: true,
    ph0: true,
    ph1: true,
    ph2: true,
    ph3: true,
    media_key: true,
    width: true,
    height: true,
    animated: true,
    original_format: true,
    thumbhash: true,
    human_score: true,
    variants: true,
    moderation: true,
    person_flag: true,
    moderated_at: true,
  }),
  upload_tags: columns<UploadTagsTable>({ upload_id: true, tag_id: true, created_at: true }),
  votes: columns<VotesTable>({ user_id: true, upload_id: true, value: true, created_at: true, updated_at: true }),
  idempotency_keys: columns<IdempotencyKeysTable>({
    user_id: true,
    key: true,
    request_hash: true,
    status: true,
    body: true,
    created_at: true,
    claim_token: true,
    lease_until: true,
  }),
  media_garbage: columns<MediaGarbageTable>({ media_key: true, created_at: true }),
  reports: columns<ReportsTable>({
    id: true,
    upload_id: true,
    user_id: true,
    reason: true,
    note: true,
    status: true,
    created_at: true,
    closed_at: true,
  }),
  blocklist: columns<BlocklistTable>({
    id: true,
    sha256: true,
    phash: true,
    ph0: true,
    ph1: true,
    ph2: true,
    ph3: true,
    entry_key: true,
    reason: true,
    source: true,
    created_at: true,
  }),
  blocklist_pending: columns<BlocklistPendingTable>({ entry_id: true, created_at: true, job_id: true }),
  blocklist_version: columns<BlocklistVersionTable>({ id: true, version: true }),
  moderation_jobs: columns<ModerationJobsTable>({
    id: true,
    kind: true,
    status: true,
    target_type: true,
    target_id: true,
    reason: true,
    moderator_id: true,
    moderator_name: true,
    done: true,
    total: true,
    attempts: true,
    error: true,
    lease_owner: true,
    lease_until: true,
    created_at: true,
    updated_at: true,
  }),
  modlog: columns<ModlogTable>({
    id: true,
    at: true,
    action: true,
    target_type: true,
    target_id: true,
    reason: true,
    moderator_id: true,
    moderator_name: true,
  }),
  vote_rings: columns<VoteRingsTable>({
    id: true,
    ring_key: true,
    target_key: true,
    status: true,
    accounts: true,
    evidence: true,
    created_at: true,
    closed_at: true,
    closed_by: true,
    action: true,
    reason: true,
    voided_votes: true,
  }),
  schema_migrations: columns<SchemaMigrationsTable>({ id: true, name: true, executed_at: true }),
};
