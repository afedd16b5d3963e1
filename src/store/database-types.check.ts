/**
 * Compile-time guard (no runtime code): each MikroORM entity maps exactly the columns its table declares in
 * database-types.ts (MikroORM's own inference of a Kysely schema from the entities, compared key by key), and
 * an upload row as the repositories select it has a column for every field of the domain's UploadRecord.
 * `npm run typecheck` fails when one side changes without the other.
 */
import type { InferKyselyDB } from '@mikro-orm/sql';
import type { UploadRecord } from '../domain/uploads/upload.types.ts';
import type { DB } from './database-types.ts';
import type { ALL_ENTITIES } from './entities/index.ts';
import type { UploadRow } from './repositories/upload.repository.ts';

type EntityTables = InferKyselyDB<(typeof ALL_ENTITIES)[number]>;

type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;
type Assert<T extends true> = T;

/** `createdAt` → `created_at`, `ph0` → `ph0`. */
type Snake<S extends string> = S extends `${infer H}${infer T}`
  ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${Snake<T>}`
  : S;
type SnakeKeys<T> = { [K in keyof T & string as Snake<K>]: T[K] };

export type DatabaseTypeChecks = [
  // Every entity has its table here, with the same columns.
  Assert<[keyof EntityTables] extends [keyof DB] ? true : false>,
  Assert<SameKeys<EntityTables['users'], DB['users']>>,
  Assert<SameKeys<EntityTables['api_tokens'], DB['api_tokens']>>,
  Assert<SameKeys<EntityTables['tags'], DB['tags']>>,
  Assert<SameKeys<EntityTables['uploads'], DB['uploads']>>,
  Assert<SameKeys<EntityTables['upload_tags'], DB['upload_tags']>>,
  Assert<SameKeys<EntityTables['votes'], DB['votes']>>,
  Assert<SameKeys<EntityTables['idempotency_keys'], DB['idempotency_keys']>>,
  // The selected upload row and the domain's record name the same fields (tags come from another table).
  Assert<SameKeys<UploadRow, SnakeKeys<Omit<UploadRecord, 'tags'>>>>,
];
