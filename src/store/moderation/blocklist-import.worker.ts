/**
 * A thread that writes a blocklist import's steps (blocklist-import.ts) on a connection of its own to the SQLite
 * file: the same statements as on the main connection (addBlocklistEntries), in one transaction per task, so that
 * neither the statements nor the commit's writes run on the gateway's event loop. SQLite lets one writer in at a
 * time: the main connection's writes wait for a step (a few milliseconds, its busy wait), as they would for another
 * process's; a step waits for them in turn, here, where waiting costs the event loop nothing.
 */
import { Kysely } from 'kysely';
import type { DB } from '../database-types.ts';
import { sqliteDialect } from '../dialect.ts';
import { nodeSqliteDialect } from '../node-sqlite-dialect.ts';
import { addBlocklistEntries } from './blocklist.repository.ts';
import type { ImportStepTask } from './blocklist-import.ts';

/** A connection per database file (a test process opens several). */
const connections = new Map<string, Kysely<DB>>();

/** The ids added by one step, committed. */
export default function importStep({ path, entries, opts }: ImportStepTask): Promise<string[]> {
  let kysely = connections.get(path);
  if (!kysely) connections.set(path, (kysely = new Kysely<DB>({ dialect: nodeSqliteDialect(path) })));
  return sqliteDialect.retrying(() =>
    kysely.transaction().execute((tx) => addBlocklistEntries(tx, sqliteDialect, entries, opts)),
  );
}
