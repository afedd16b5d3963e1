import type { UserStore } from '../../domain/auth/auth.service.ts';
import type { UserRecord } from '../../domain/users.ts';
import type { ClientFacts } from '../../domain/client-facts.ts';
import type { Database } from '../database.ts';
import { User, type IUser } from '../entities/index.ts';
import { isUniqueViolation } from '../dialect.ts';

const key = (s: string) => s.trim().toLowerCase();

/** A user entity as the domain sees it (with its ban, which every authenticated request checks). */
export function userRecordOf(
  u: Pick<IUser, 'id' | 'username' | 'email' | 'role' | 'createdAt' | 'bannedUntil'>,
): UserRecord {
  return {
    id: u.id,
    username: u.username,
    email: u.email,
    role: u.role === 'admin' ? 'admin' : 'user',
    createdAt: u.createdAt,
    bannedUntil: u.bannedUntil ?? null,
  };
}
const toRecord = userRecordOf;

const where = (by: { email: string } | { username: string }) =>
  'email' in by ? { emailKey: key(by.email) } : { usernameKey: key(by.username) };

export class UserRepository implements UserStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async create(
    user: UserRecord & { passwordHash: string },
    client?: ClientFacts,
  ): Promise<UserRecord | 'username' | 'email'> {
    const em = this.#db.em();
    em.create(User, {
      id: user.id,
      username: user.username,
      usernameKey: key(user.username),
      email: user.email,
      emailKey: key(user.email),
      passwordHash: user.passwordHash,
      role: user.role,
      createdAt: user.createdAt,
      signupNet: client?.net ?? null,
      signupUa: client?.ua ?? null,
    });
    try {
      await em.flush();
    } catch (e) {
      if (isUniqueViolation(e)) return /username/.test(String((e as Error).message)) ? 'username' : 'email';
      throw e;
    }
    return { ...user, bannedUntil: null };
  }

  /**
   * Every request signed in with a JWT reads its user here (is it there, is it banned). One statement, not an entity
   * manager's `findOne` (a fork, an identity map, hydration): a cached feed page read with a JWT cost ~256 µs of CPU
   * against 15 anonymous (`npm run bench:gateway`, "cost of being signed in", SQLite, 2026-12-01).
   */
  async findById(id: string): Promise<UserRecord | null> {
    const { dialect } = this.#db;
    const row = await this.#db
      .db()
      .selectFrom('users')
      .select(['id', 'username', 'email', 'role', 'created_at', 'banned_until'])
      .where('id', '=', id)
      .executeTakeFirst();
    return row
      ? toRecord({
          ...row,
          createdAt: dialect.readDate(row.created_at),
          bannedUntil: row.banned_until == null ? null : dialect.readDate(row.banned_until),
        })
      : null;
  }

  /** The user with this name (any case), or null. */
  async findByUsername(username: string): Promise<UserRecord | null> {
    const u = await this.#db.em().findOne(User, { usernameKey: key(username) });
    return u ? toRecord(u) : null;
  }

  async findForLogin(by: { email: string } | { username: string }) {
    const u = await this.#db.em().findOne(User, where(by), { populate: ['passwordHash'] });
    return u ? { ...toRecord(u), passwordHash: u.passwordHash } : null;
  }

  async exists(by: { email: string } | { username: string }): Promise<boolean> {
    return (await this.#db.em().count(User, where(by))) > 0;
  }

  async setRole(username: string, role: UserRecord['role']): Promise<UserRecord | null> {
    const em = this.#db.em();
    const u = await em.findOne(User, { usernameKey: key(username) });
    if (!u) return null;
    const before = toRecord(u);
    if (before.role !== role) await em.nativeUpdate(User, { id: u.id }, { role });
    return before;
  }
}
