import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthService, type ApiTokenStore, type UserStore } from '../../src/domain/auth/auth.service.ts';
import { createJwtIssuer } from '../../src/domain/auth/jwt.ts';
import { hashPassword, verifyPassword } from '../../src/domain/auth/passwords.ts';
import type { UserRecord } from '../../src/domain/users.ts';

const cheap = { N: 2 ** 10, r: 8, p: 1 };

function fixture() {
  const users = new Map<string, UserRecord & { passwordHash: string }>();
  const store: UserStore = {
    async create(u) {
      users.set(u.id, u);
      return u;
    },
    async findById(id) {
      return users.get(id) ?? null;
    },
    async findForLogin(by) {
      return [...users.values()].find((u) => ('email' in by ? u.email === by.email : u.username === by.username)) ?? null;
    },
    async exists() {
      return false;
    },
  };
  const tokens = {} as ApiTokenStore;
  const verified: string[] = [];
  const auth = new AuthService({
    users: store,
    tokens,
    jwt: createJwtIssuer({ secret: 's'.repeat(32), ttlSeconds: 60 }),
    clock: { now: () => new Date() },
    adminUsernames: new Set(),
    passwords: {
      hash: (p) => hashPassword(p, cheap),
      async verify(p, stored) {
        verified.push(stored);
        return verifyPassword(p, stored);
      },
    },
  });
  return { auth, verified };
}

test('an unknown user costs a full password verification, like a wrong password', async () => {
  const { auth, verified } = fixture();
  await auth.register({ email: 'a@example.test', username: 'alice', password: 'password123' });
  await assert.rejects(auth.login({ email: 'a@example.test', password: 'wrong-password' }), { code: 'unauthorized' });
  await assert.rejects(auth.login({ email: 'nobody@example.test', password: 'wrong-password' }), { code: 'unauthorized' });
  assert.equal(verified.length, 2, 'both failures ran scrypt');
  assert.match(verified[1]!, /^scrypt\$1024\$8\$1\$/, 'the unknown user was checked against a real decoy hash');
});

test('password hashes verify, reject a wrong password and a malformed hash', async () => {
  const h = await hashPassword('secret-pass', cheap);
  assert.equal(await verifyPassword('secret-pass', h), true);
  assert.equal(await verifyPassword('secret-pasS', h), false);
  assert.equal(await verifyPassword('secret-pass', 'bcrypt$whatever'), false);
  assert.notEqual(await hashPassword('secret-pass', cheap), h, 'salted');
});

test('JWTs expire', () => {
  let now = 1_000_000_000_000;
  const issuer = createJwtIssuer({ secret: 's'.repeat(32), ttlSeconds: 60, now: () => now });
  const { token } = issuer.sign('user-1');
  assert.equal(issuer.verify(token), 'user-1');
  now += 61_000;
  assert.equal(issuer.verify(token), null);
});
