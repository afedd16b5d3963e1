/**
 * `pixvote admin grant|revoke USERNAME`: the operator's command on the server's own database (not over HTTP).
 * It reads the server's environment — DATABASE_URL, or the SQLite file in DATA_DIR (default ./data) — opens the
 * database through src/store (applying migrations the server would apply) and sets the stored role. The server
 * reads the role with the user on every request, so the change takes effect from the next request, in every process.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setAdmin } from '../domain/auth/admin-roles.ts';
import { AppError } from '../domain/errors.ts';
import { CliError, parseCommandArgs } from './cli-config.store.ts';

export const ADMIN_USAGE = `usage: pixvote admin grant USERNAME | pixvote admin revoke USERNAME

  Makes USERNAME an admin (grant) or a plain user again (revoke), in the database the server uses:
  DATABASE_URL (postgres://…) or else $DATA_DIR/app.db (DATA_DIR default ./data), as the server reads them.
  Run it with the server's environment. Takes effect from the user's next request.
`;

/** Where the server keeps its data, as src/config.ts reads it (without the variables this command does not need). */
export function databaseOf(env: NodeJS.ProcessEnv): { databaseUrl: string | null; sqlitePath: string } {
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new CliError(`DATABASE_URL=${databaseUrl}: expected a postgres or postgresql URL`);
  const sqlitePath = join(resolve(env.DATA_DIR || './data'), 'app.db');
  // Never create an empty database by running in the wrong directory.
  if (!databaseUrl && !existsSync(sqlitePath)) {
    throw new CliError(`no database at ${sqlitePath}: run this with the server's DATA_DIR (or DATABASE_URL)`, 1);
  }
  return { databaseUrl, sqlitePath };
}

export async function runAdmin(
  args: string[],
  out: NodeJS.WritableStream,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { values, positionals } = parseCommandArgs('admin', {
    args,
    allowPositionals: true,
    options: { help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) return (out.write(ADMIN_USAGE), 0);
  const [action, username, ...extra] = positionals;
  if ((action !== 'grant' && action !== 'revoke') || !username || extra.length)
    throw new CliError(ADMIN_USAGE.trimEnd());

  // Loaded only here: the HTTP client commands never pay for the ORM.
  const { openDatabase } = await import('../store/database.ts');
  const { UserRepository } = await import('../store/repositories/user.repository.ts');
  const where = databaseOf(env);
  const db = await openDatabase({ ...where, poolSize: 1 }).catch((e: Error) => {
    throw new CliError(
      `cannot open the database ${where.databaseUrl ? 'at DATABASE_URL' : where.sqlitePath}: ${e.message}`,
      1,
    );
  });
  try {
    const r = await setAdmin(new UserRepository(db), username, action === 'grant');
    const line =
      r.role === 'admin'
        ? r.changed
          ? 'is now an admin'
          : 'is already an admin'
        : r.changed
          ? 'is no longer an admin'
          : 'was not an admin';
    out.write(`${r.username} ${line}\n`);
    return 0;
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw new CliError(e.message, 1);
    throw e;
  } finally {
    await db.close();
  }
}
