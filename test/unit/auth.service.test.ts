import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthService, scryptHasher, type ApiTokenStore, type UserStore } from '../../src/domain/auth/auth.service.ts';
import { AppError } from '../../src/domain/errors.ts';
import { PasswordHashPool } from '../../src/workers/password-hash.pool.ts';
import jwt from 'jsonwebtoken';
import { createJwtIssuer } from '../../src/domain/auth/jwt.ts';
import {
  hashPassword,
  libuvScrypt,
  verifyPassword,
  type ScryptJob,
  type ScryptKdf,
} from '../../src/domain/auth/passwords.ts';
import type { UserRecord } from '../../src/domain/users.ts';

const cheap = { N: 2 ** 10, r: 8, p: 1 };

function fixture(passwords?: ConstructorParameters<typeof AuthService>[0]['passwords']) {
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
      return (
        [...users.values()].find((u) => ('email' in by ? u.email === by.email : u.username === by.username)) ?? null
      );
    },
    async exists() {
      return false;
    },
    async setRole(username, role) {
      const u = [...users.values()].find((x) => x.username.toLowerCase() === username.toLowerCase());
      if (!u) return null;
      const before = { ...u };
      u.role = role;
      return before;
    },
  };
  const tokens = {} as ApiTokenStore;
  const verified: string[] = [];
  const auth = new AuthService({
    users: store,
    tokens,
    jwt: createJwtIssuer({ secret: 's'.repeat(32), ttlSeconds: 60 }),
    clock: { now: () => new Date() },
    passwords: passwords ?? {
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
  await assert.rejects(auth.login({ email: 'nobody@example.test', password: 'wrong-password' }), {
    code: 'unauthorized',
  });
  assert.equal(verified.length, 2, 'both failures ran scrypt');
  assert.match(verified[1]!, /^scrypt\$1024\$8\$1\$/, 'the unknown user was checked against a real decoy hash');
});

test('the scrypt hasher’s decoy: shaped as its hashes, as dear to check, never matches', async () => {
  const derived: ScryptJob[] = [];
  const kdf: ScryptKdf = {
    derive: (pw, salt, len, job) => (derived.push(job), libuvScrypt.derive(pw, salt, len, job)),
  };
  const hasher = scryptHasher(cheap, kdf);
  const real = await hasher.hash('password123');
  const decoy = hasher.decoy!();
  const shape = (h: string) => h.split('$').map((part, i) => (i >= 4 ? Buffer.from(part, 'base64url').length : part));
  assert.deepEqual(shape(decoy), shape(real), 'the same parameters and lengths');
  assert.notEqual(hasher.decoy!(), decoy, 'random every time');
  derived.length = 0;
  for (const pw of ['password123', '', 'x'.repeat(200)]) assert.equal(await hasher.verify(pw, decoy), false, pw);
  assert.deepEqual(derived, [derived[0], derived[0], derived[0]]);
  assert.equal(await hasher.verify('password123', real), true);
  assert.deepEqual(derived.at(-1), derived[0], 'checking the decoy cost what checking a real hash costs');
});

test('password hashes verify, reject a wrong password and a malformed hash', async () => {
  const h = await hashPassword('secret-pass', cheap);
  assert.equal(await verifyPassword('secret-pass', h), true);
  assert.equal(await verifyPassword('secret-pasS', h), false);
  assert.equal(await verifyPassword('secret-pass', 'bcrypt$whatever'), false);
  assert.notEqual(await hashPassword('secret-pass', cheap), h, 'salted');
});

test(
  'the hashing pool: ' + 'hashes and verifies on its own threads (its completed count is every hash), off libuv',
  async (t) => {
    const pool = new PasswordHashPool({ threads: 1 });
    t.after(() => pool.close());
    const hasher = scryptHasher(cheap, pool);
    const h = await hasher.hash('secret-pass');
    assert.match(h, /^scrypt\$1024\$8\$1\$/);
    assert.equal(await hasher.verify('secret-pass', h), true);
    assert.equal(await hasher.verify('secret-pasS', h), false);
    assert.equal(pool.stats().completed, 3, 'each hash and verify ran in the pool');
    // Interchangeable with Node's own scrypt: hashes made before the pool existed still verify, and vice versa.
    assert.equal(await verifyPassword('secret-pass', h), true);
    assert.equal(await hasher.verify('old-pass', await hashPassword('old-pass', cheap)), true);
  },
);

test('with the pool, a wrong email and a wrong password still cost one full verification each', async (t) => {
  const pool = new PasswordHashPool({ threads: 1 });
  t.after(() => pool.close());
  const { auth } = fixture(scryptHasher(cheap, pool));
  await auth.register({ email: 'a@example.test', username: 'alice', password: 'password123' });
  const session = await auth.login({ email: 'a@example.test', password: 'password123' });
  assert.equal(session.user.username, 'alice');
  const before = pool.stats().completed;
  await assert.rejects(auth.login({ email: 'a@example.test', password: 'wrong-password' }), { code: 'unauthorized' });
  assert.equal(pool.stats().completed, before + 1, 'a wrong password: one scrypt in the pool');
  await assert.rejects(auth.login({ email: 'nobody@example.test', password: 'wrong-password' }), {
    code: 'unauthorized',
  });
  assert.equal(
    pool.stats().completed,
    before + 2,
    'an unknown email: one scrypt in the pool too, with the same parameters',
  );
});

test('the hashing pool refuses past its queue bound with 503 busy and Retry-After', async (t) => {
  const pool = new PasswordHashPool({ threads: 1, maxQueue: 1 });
  t.after(() => pool.close());
  const slow = { N: 2 ** 14, r: 8, p: 1 };
  const results = await Promise.allSettled(Array.from({ length: 4 }, () => hashPassword('password123', slow, pool)));
  const refused = results.filter((r) => r.status === 'rejected').map((r) => r.reason as AppError);
  assert.ok(refused.length >= 2, `at most one running and one queued: ${refused.length} refused`);
  for (const e of refused) {
    assert.ok(e instanceof AppError, String(e));
    assert.equal(e.code, 'busy');
    assert.equal(e.status, 503);
    assert.match(e.headers['Retry-After'] ?? '', /^[1-9]\d*$/);
    assert.match(e.message, /password hashing/);
  }
  assert.ok(
    results.some((r) => r.status === 'fulfilled'),
    'the ones admitted are hashed',
  );
});

test('JWTs expire', () => {
  let now = 1_000_000_000_000;
  const issuer = createJwtIssuer({ secret: 's'.repeat(32), ttlSeconds: 60, now: () => now });
  const { token } = issuer.sign('user-1');
  assert.equal(issuer.verify(token), 'user-1');
  now += 61_000;
  assert.equal(issuer.verify(token), null);
});

test('JWTs: the key is the secret’s bytes: tokens signed with the secret as a string verify, and back', () => {
  const secret = 's'.repeat(32);
  const issuer = createJwtIssuer({ secret, ttlSeconds: 60 });
  const iat = Math.floor(Date.now() / 1000);
  // As a token made before the key was kept, or by another process of the same deployment.
  assert.equal(
    issuer.verify(jwt.sign({ sub: 'user-2', iat, exp: iat + 60 }, secret, { algorithm: 'HS256' })),
    'user-2',
  );
  const { token } = issuer.sign('user-3');
  assert.equal((jwt.verify(token, secret, { algorithms: ['HS256'] }) as jwt.JwtPayload).sub, 'user-3');
  // And nothing else does: another secret, another algorithm, no signature.
  const other = jwt.sign({ sub: 'user-2', iat, exp: iat + 60 }, 't'.repeat(32), { algorithm: 'HS256' });
  const hs512 = jwt.sign({ sub: 'user-2', iat, exp: iat + 60 }, secret, { algorithm: 'HS512' });
  const none = jwt.sign({ sub: 'user-2', iat, exp: iat + 60 }, '', { algorithm: 'none' });
  for (const t of [other, hs512, none]) assert.equal(issuer.verify(t), null);
});
