/**
 * Who is an admin: the stored role, changed only by an operator on the database (`pixvote admin grant|revoke`)
 * or, at startup, by ADMIN_USERNAMES for accounts that already exist. Registering never grants it, so nobody can
 * become admin by being first to register a listed name.
 */
import { errors } from '../errors.ts';
import type { UserRecord } from '../users.ts';
import type { UserStore } from './auth.service.ts';

export interface RoleChange {
  username: string;
  role: UserRecord['role'];
  /** False when the user already had that role. */
  changed: boolean;
}

export async function setAdmin(
  users: Pick<UserStore, 'setRole'>,
  username: string,
  admin: boolean,
): Promise<RoleChange> {
  const role = admin ? 'admin' : 'user';
  const before = await users.setRole(username.trim(), role);
  if (!before) throw errors.notFound(`no user "${username.trim()}"`);
  return { username: before.username, role, changed: before.role !== role };
}

/** ADMIN_USERNAMES at startup: promotes the listed accounts that exist; names nobody has are left alone. */
export async function promoteListedAdmins(
  users: Pick<UserStore, 'setRole'>,
  usernames: Iterable<string>,
): Promise<{ promoted: string[]; missing: string[] }> {
  const promoted: string[] = [];
  const missing: string[] = [];
  for (const name of usernames) {
    const before = await users.setRole(name, 'admin');
    if (!before) missing.push(name);
    else if (before.role !== 'admin') promoted.push(before.username);
  }
  return { promoted, missing };
}
