import { randomBytes, randomUUID } from 'node:crypto';
import type { Client } from './http.ts';
import type { Composed } from '../../src/main.ts';
import { setAdmin } from '../../src/domain/auth/admin-roles.ts';
import { UserRepository } from '../../src/store/repositories/user.repository.ts';
import type { Database } from '../../src/store/database.ts';

export interface TestUser {
  id: string;
  username: string;
  email: string;
  password: string;
  token: string;
}

/** Registers a fresh user through the API and returns its JWT. */
export async function registerUser(api: Client, name?: string): Promise<TestUser> {
  const username = name ?? `u_${randomBytes(5).toString('hex')}`;
  const email = `${username}@example.test`;
  const password = `pw-${randomBytes(6).toString('hex')}`;
  const r = await api.post('/api/auth', { action: 'register', email, username, password });
  if (r.status !== 201) throw new Error(`register failed: ${r.status} ${r.text}`);
  return { id: r.body.user.id, username, email, password, token: r.body.token };
}

/** An API token (pv_…) for the user. */
export async function apiToken(api: Client, user: TestUser, name = 'test'): Promise<string> {
  const r = await api.post('/api/auth/tokens/generate', { name }, { token: user.token });
  if (r.status !== 201) throw new Error(`token generate failed: ${r.status} ${r.text}`);
  return r.body.token;
}

/** Makes an existing user admin as an operator does (`pixvote admin grant`), on the app's own database. */
export async function grantAdmin(app: { composed: Composed }, username: string): Promise<void> {
  await setAdmin(new UserRepository(app.composed.db), username, true);
}

/** A fresh user made admin. Registering never makes one, whatever ADMIN_USERNAMES says. */
export async function registerAdmin(app: { api: Client; composed: Composed }, name?: string): Promise<TestUser> {
  const user = await registerUser(app.api, name);
  await grantAdmin(app, user.username);
  return user;
}

/**
 * REPORT_TRUST_* at 0: every reporter counts toward REPORT_HOLD_THRESHOLD, for tests of the automatic hold itself
 * (by default a reporter must be a day old with an accepted upload or 10 votes; report-trust.test.ts tests that).
 */
export const TRUST_EVERY_REPORTER: Readonly<Record<string, string>> = Object.freeze({
  REPORT_TRUST_MIN_AGE: '0',
  REPORT_TRUST_MIN_UPLOADS: '0',
  REPORT_TRUST_MIN_VOTES: '0',
});

/**
 * Sets when the account was registered to `seconds` ago, in the app's own database (the minimum-age and report
 * trust rules read it with the user on every request): an old account without waiting, or a young one again.
 */
export async function setAccountAge(app: { composed: Composed }, userId: string, seconds: number): Promise<void> {
  const { db, dialect } = { db: app.composed.db.db(), dialect: app.composed.db.dialect };
  const r = await db
    .updateTable('users')
    .set({ created_at: dialect.date(new Date(Date.now() - seconds * 1000)) })
    .where('id', '=', userId)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== 1) throw new Error(`no user ${userId} to age`);
}

/** A user row written straight into the database (store-level tests, no API): returns its id. */
export async function insertUser(db: Database, createdAt: Date): Promise<string> {
  const id = randomUUID();
  const name = `u_${id.replace(/-/g, '').slice(0, 12)}`;
  await db
    .db()
    .insertInto('users')
    .values({
      id,
      username: name,
      username_key: name,
      email: `${name}@x.test`,
      email_key: `${name}@x.test`,
      password_hash: 'x',
      role: 'user',
      created_at: db.dialect.date(createdAt),
    })
    .execute();
  return id;
}
