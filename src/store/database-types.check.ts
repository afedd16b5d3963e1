/**
 * Compile-time guard (no runtime code): the Kysely schema derived from the entities has the types the repositories
 * rely on, and an upload row as the repositories select it has a column for every field of the domain's
 * UploadRecord. `npm run typecheck` fails when one side changes without the other.
 */
import type { ColumnType, Generated } from 'kysely';
import type { UploadRecord } from '../domain/uploads/upload.types.ts';
import type { Bool, DB, Json, Timestamp } from './database-types.ts';
import type { UploadRow } from './repositories/upload.repository.ts';
import type { VariantInfo } from '../domain/uploads/upload.types.ts';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;

/** `createdAt` → `created_at`, `ph0` → `ph0`. */
type Snake<S extends string> = S extends `${infer H}${infer T}`
  ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${Snake<T>}`
  : S;
type SnakeKeys<T> = { [K in keyof T & string as Snake<K>]: T[K] };

export type DatabaseTypeChecks = [
  // What each kind of column becomes for the drivers.
  Assert<Same<DB['uploads']['created_at'], Timestamp>>,
  Assert<Same<DB['uploads']['moderated_at'], Timestamp | null>>,
  Assert<Same<DB['uploads']['is_private'], Generated<Bool>>>,
  Assert<Same<DB['uploads']['animated'], Bool | null>>,
  Assert<Same<DB['uploads']['variants'], Json<Record<string, VariantInfo>> | null>>,
  Assert<Same<DB['uploads']['user_id'], string>>,
  Assert<Same<DB['uploads']['upvotes'], Generated<number>>>,
  Assert<Same<DB['moderation_jobs']['status'], Generated<'queued' | 'running' | 'done' | 'failed'>>>,
  Assert<Same<DB['blocklist_version']['version'], ColumnType<number | string, number | undefined, number>>>,
  // The selected upload row and the domain's record name the same fields (tags come from another table).
  Assert<Same<keyof UploadRow, keyof SnakeKeys<Omit<UploadRecord, 'tags'>>>>,
];
