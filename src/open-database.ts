/** The database the configuration names, for the gateway processes and the cluster primary alike. */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { openDatabaseWhenReachable, type Database } from './store/database.ts';

/** The configured database, waited for up to DATABASE_WAIT_MS while it does not answer yet (each retry logged). */
export function openConfiguredDatabase(config: Config, log: Logger): Promise<Database> {
  return openDatabaseWhenReachable(
    { databaseUrl: config.databaseUrl, sqlitePath: join(config.dataDir, 'app.db') },
    {
      waitMs: config.databaseWaitMs,
      onRetry: ({ attempt, delayMs, remainingMs, err }) =>
        log.warn(
          { attempt, retryInMs: delayMs, givingUpInMs: remainingMs, err },
          'the database does not answer yet; retrying',
        ),
    },
  );
}
