import { randomBytes } from 'node:crypto';
import type { Client } from './http.ts';
import type { Composed } from '../../src/main.ts';
import { setAdmin } from '../../src/domain/auth/admin-roles.ts';
import { UserRepository } from '../../src/store/repositories/user.repository.ts';

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
