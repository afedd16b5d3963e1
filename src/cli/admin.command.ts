/**
 * `pixvote admin grant|revoke USERNAME`: the operator's command on the server's own database (not over HTTP).
 * It reads the server's environment — DATABASE_URL, or the SQLite file in DATA_DIR (default ./data; relative to the
 * checkout, as the server takes it, whatever the current directory) — opens the database through src/store
 * (applying migrations the server would apply) and sets the stored role, saying which database it used. The
 * server reads the role with the user on every request, so the change takes effect from the next request, in
 * every process.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { setAdmin } from '../domain/auth/admin-roles.ts';
import { AppError } from '../domain/errors.ts';
import { maskPassword } from '../config.ts';
import { PACKAGE_ROOT, resolveDataDir } from '../data-dir.ts';
import { CliError, parseCommandArgs } from './cli-config.store.ts';

export const ADMIN_USAGE = `usage: pixvote admin grant USERNAME | pixvote admin revoke USERNAME

  Makes USERNAME an admin (grant) or a plain user again (revoke), in the database the server uses:
  DATABASE_URL (postgres://…) or else $DATA_DIR/app.db, as the server reads them. Like the server, it takes a
  relative DATA_DIR from the checkout's folder, not from the current directory (unset: ${resolveDataDir(undefined)}).
  Run it with the server's environment; it says which database it used.
  Takes effect from the user's next request.
`;

/** Where the server keeps its data, as src/config.ts reads it (without the variables this command does not need). */
export function databaseOf(env: NodeJS.ProcessEnv): { databaseUrl: string | null; sqlitePath: string; label: string } {
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new CliError(`DATABASE_URL=${maskPassword(databaseUrl)}: expected a postgres or postgresql URL`);
  const dataDir = resolveDataDir(env.DATA_DIR);
  const sqlitePath = join(dataDir, 'app.db');
  // Never create an empty database by running with the wrong DATA_DIR.
  if (!databaseUrl && !existsSync(sqlitePath)) {
    throw new CliError(
      `no database at ${sqlitePath} (${dataDirSaid(env.DATA_DIR)}): ` +
        "run this with the server's DATA_DIR (or DATABASE_URL)",
      1,
    );
  }
  return { databaseUrl, sqlitePath, label: databaseUrl ? `DATABASE_URL=${maskPassword(databaseUrl)}` : sqlitePath };
}

/** How DATA_DIR was read: as given, and where a relative one was taken from. */
function dataDirSaid(value: string | undefined): string {
  if (!value) return `DATA_DIR unset: the checkout's ./data`;
  return isAbsolute(value) ? `DATA_DIR=${value}` : `DATA_DIR=${value}, from the checkout's folder ${PACKAGE_ROOT}`;
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
    throw new CliError(`cannot open the database ${where.label}: ${e.message}`, 1);
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
    out.write(`${r.username} ${line} (database: ${where.label})\n`);
    return 0;
  } catch (e) {
    if (e instanceof AppError && e.code === 'not_found') throw new CliError(`${e.message} in ${where.label}`, 1);
    throw e;
  } finally {
    await db.close();
  }
}
