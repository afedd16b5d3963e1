/**
 * The Kysely schema, derived from the entities (entities/, the one declaration of every table: src/store/README.md):
 * every query is `Kysely<DB>`, and the row types of the repositories derive from it (`Selectable<UploadsTable>`,
 * `Insertable<…>`). `DB` is Kysely's usual name for it (`Database` is the handle of database.ts).
 *
 * MikroORM infers the tables and columns (`InferKyselyDB`: table names, snake_case columns, `Generated` for a
 * default, `| null` for nullable, `<relation>_id` for a many-to-one) with the types the ORM hydrates. Kysely reads
 * raw driver values instead, so `DriverColumns` below turns each entity type into what the drivers give on BOTH
 * databases:
 *
 *   - timestamps (`Date` in the entity; `datetime`, `timestamptz(3)`): written and compared as `dialect.date(d)`
 *     (epoch milliseconds on SQLite, a Date on PostgreSQL); read back as epoch milliseconds (SQLite) or as text
 *     (PostgreSQL: MikroORM's connection leaves timestamps unparsed), through `dialect.readDate(v)`;
 *   - booleans (`integer` 0/1, `boolean`): written as `dialect.bool(b)`, read through `dialect.readBool(v)`;
 *   - JSON (an object type in the entity; `json` text, `jsonb`): written as a JSON string; read as that string on
 *     SQLite, parsed on PostgreSQL;
 *   - and, column by column (COLUMN_OVERRIDES), what no entity type says: a `bigint` is text on PostgreSQL.
 *
 * Left out of the entities: MikroORM's own `schema_migrations` (its Migrator creates it; declared here by hand) and
 * the sqlite-vec table `upload_phash_vec` (SQLite only, a virtual table reached with raw SQL in
 * similarity/similarity-index.ts).
 */
import type { ColumnType, Generated, SqlBool } from 'kysely';
import type { InferKyselyDB } from '@mikro-orm/sql';
import type { ALL_ENTITIES } from './entities/index.ts';

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

/** A value of an entity's type as the drivers give it (distributes over `| null`). */
type DriverValue<V> = V extends null
  ? null
  : V extends Date
    ? Timestamp
    : V extends boolean
      ? Bool
      : V extends string | number | bigint
        ? V
        : Json<V>;

/** `Generated<S>` (a default: optional on insert) keeps its generation over the driver's type. */
type DriverColumn<C> =
  C extends ColumnType<infer S, infer I, infer _U>
    ? undefined extends I
      ? Generated<DriverValue<S>>
      : DriverValue<S>
    : DriverValue<C>;

type DriverColumns<T> = { [K in keyof T]: DriverColumn<T[K]> };

/** What the drivers give where the entity's type cannot say it. */
interface COLUMN_OVERRIDES {
  blocklist_version: {
    /** bigint: a number from the ORM, text from the PostgreSQL driver. */
    version: ColumnType<number | string, number | undefined, number>;
  };
}

type EntityTables = InferKyselyDB<(typeof ALL_ENTITIES)[number]>;

type Tables = {
  [T in keyof EntityTables]: T extends keyof COLUMN_OVERRIDES
    ? Omit<DriverColumns<EntityTables[T]>, keyof COLUMN_OVERRIDES[T]> & COLUMN_OVERRIDES[T]
    : DriverColumns<EntityTables[T]>;
};

export type UsersTable = Tables['users'];
export type ApiTokensTable = Tables['api_tokens'];
export type TagsTable = Tables['tags'];
export type UploadsTable = Tables['uploads'];
export type UploadTagsTable = Tables['upload_tags'];
export type RankMovesTable = Tables['rank_moves'];
export type VotesTable = Tables['votes'];
export type IdempotencyKeysTable = Tables['idempotency_keys'];
export type MediaGarbageTable = Tables['media_garbage'];
export type ReportsTable = Tables['reports'];
export type BlocklistTable = Tables['blocklist'];
export type BlocklistPdqChunksTable = Tables['blocklist_pdq_chunks'];
export type BlocklistPendingTable = Tables['blocklist_pending'];
export type BlocklistVersionTable = Tables['blocklist_version'];
export type ModerationJobsTable = Tables['moderation_jobs'];
export type ModlogTable = Tables['modlog'];
export type VoteRingsTable = Tables['vote_rings'];
export type VoidedVotesTable = Tables['voided_votes'];
export type WebhookEndpointsTable = Tables['webhook_endpoints'];
export type WebhookDeliveriesTable = Tables['webhook_deliveries'];

/** MikroORM's record of the migrations applied (its Migrator's table, not ours: no entity). */
export interface SchemaMigrationsTable {
  id: Generated<number>;
  name: string;
  /** Set by the database (a default). */
  executed_at: ColumnType<Date | number | string, Date | number | undefined, Date | number>;
}

export type DB = Tables & { schema_migrations: SchemaMigrationsTable };
