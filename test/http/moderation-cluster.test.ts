/**
 * Moderation with several gateway processes on one PostgreSQL and one Redis (issue 16, "the multi-process ones"):
 * a ban, a hold or a removal made through one process shows in the others from their very next request (no
 * process-local state outlives it), and concurrent reports spread over the processes hold an upload exactly once.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ServerProcess } from '../support/process.ts';
import { clusterSkip, startCluster } from '../support/cluster.ts';
import { TRUST_EVERY_REPORTER, apiToken, registerUser, type TestUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { setAdmin } from '../../src/domain/auth/admin-roles.ts';
import { openDatabase } from '../../src/store/database.ts';
import { UserRepository } from '../../src/store/repositories/user.repository.ts';

const skip = clusterSkip;
let servers: ServerProcess[] = [];
let admin: TestUser;
let cleanup: () => Promise<void> = async () => {};

before(async () => {
  if (skip) return;
  const cluster = await startCluster('mod-cluster', {
    NEAR_DUPLICATE_DISTANCE: '-1',
    REPORT_HOLD_THRESHOLD: '3',
    // Fresh accounts count as reporters here (the trust rule has its own tests in report-trust.test.ts).
    ...TRUST_EVERY_REPORTER,
    RATE_LIMIT_AUTH: '1000/15m',
    RATE_LIMIT_UPLOAD: '1000/1h',
    RATE_LIMIT_REPORT: '1000/1h',
    RATE_LIMIT_GENERAL: '100000/15m',
  });
  servers = cluster.servers;
  cleanup = cluster.stop;
  // The moderator: made admin as an operator does (`pixvote admin grant`), on the shared database.
  admin = await registerUser(servers[0]!.api);
  const db = await openDatabase({ databaseUrl: cluster.databaseUrl, sqlitePath: join(cluster.dataDir, 'app.db') });
  try {
    await setAdmin(new UserRepository(db), admin.username, true);
  } finally {
    await db.close();
  }
});
after(() => cleanup());

const procs = () => servers as [ServerProcess, ServerProcess, ServerProcess];

const act = (s: ServerProcess, id: string, action: 'approve' | 'hold' | 'remove') =>
  s.api.post(`/api/admin/uploads/${id}/moderation`, { action, reason: `cluster ${action}` }, { token: admin.token });

describe('moderation across several processes on PostgreSQL + Redis', { skip }, () => {
  test('a ban through A refuses the next request in B and C (JWT, API token, cookie, login); unban too', async () => {
    const [a, b, c] = procs();
    const victim = await registerUser(c.api);
    const token = await apiToken(b.api, victim);
    const cookie = `auth-token=${victim.token}`;
    const probes = (s: ServerProcess) => [
      s.api.get('/api/me', { token: victim.token }),
      s.api.get('/api/me', { token }),
      s.api.get('/api/me', { headers: { cookie } }),
      s.api.post('/api/auth', { action: 'login', username: victim.username, password: victim.password }),
    ];
    const statuses = async (s: ServerProcess) => {
      const replies = await Promise.all(probes(s));
      return replies.map((r) => (r.status === 403 ? `403 ${r.body.error}` : String(r.status)));
    };
    const ok = ['200', '200', '200', '200'];
    const refused = Array<string>(4).fill('403 banned');
    // B and C have served the victim (any per-process state is warm) before the ban.
    assert.deepEqual(await statuses(b), ok);
    assert.deepEqual(await statuses(c), ok);

    const ban = await a.api.post(
      `/api/admin/users/${victim.id}/ban`,
      { reason: 'cluster ban', until: null, remove_uploads: false },
      { token: admin.token },
    );
    assert.equal(ban.status, 200, ban.text);
    assert.equal(ban.body.banned_until, 'permanent');
    assert.deepEqual(await statuses(b), refused, 'B refuses the banned user from its very next request');
    assert.deepEqual(await statuses(c), refused, 'and so does C');
    assert.deepEqual(await statuses(a), refused);
    // A write is refused too, not only reads.
    const vote = await b.api.post(
      '/api/vote',
      { uploadId: '00000000-0000-4000-8000-000000000000', vote: 'fucks' },
      { token },
    );
    assert.equal(vote.status, 403);
    assert.equal(vote.body.error, 'banned');

    const unban = await c.api.del(`/api/admin/users/${victim.id}/ban`, { token: admin.token });
    assert.equal(unban.status, 200, unban.text);
    assert.deepEqual(await statuses(b), ok, 'B lets the user in again from its very next request');
    assert.deepEqual(await statuses(a), ok);

    // A timed ban made through B behaves the same in A.
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const timed = await b.api.post(
      `/api/admin/users/${victim.id}/ban`,
      { reason: 'cooling off', until, remove_uploads: false },
      { token: admin.token },
    );
    assert.equal(timed.status, 200, timed.text);
    assert.deepEqual(await statuses(a), refused);
    assert.equal((await a.api.del(`/api/admin/users/${victim.id}/ban`, { token: admin.token })).status, 200);
    assert.deepEqual(await statuses(c), ok);
  });

  test('hold and remove through A vanish from every listing of B at its next request; approve restores', async () => {
    const [a, b] = procs();
    const owner = await registerUser(a.api);
    const other = await registerUser(b.api);
    const tag = `modc${randomBytes(3).toString('hex')}`;
    const up = await uploadImage(a.api, owner.token, await photoJpeg({ width: 400, height: 300, seed: 16_001 }), {
      tags: `${tag},${tag}-two`,
    });
    assert.equal(up.status, 201, up.text);
    const id = up.body.id as string;

    const ids = (r: { body: { uploads?: Array<{ id: string }>; items?: Array<{ id: string }> } }) =>
      (r.body.uploads ?? r.body.items ?? []).map((u) => u.id);
    /** Where B shows the upload, by listing; each one read (and so cached) by B. */
    const shownBy = async (s: ServerProcess): Promise<string[]> => {
      const shown: string[] = [];
      for (const sort of ['new', 'top', 'hot', 'best']) {
        const r = await s.api.get(`/api/uploads?limit=50&sort=${sort}`);
        assert.equal(r.status, 200);
        if (ids(r).includes(id)) shown.push(`uploads sort=${sort}`);
      }
      const plain = await s.api.get('/api/uploads?limit=50');
      if (ids(plain).includes(id)) shown.push('uploads');
      const recent = await s.api.get('/api/items-recent?limit=50');
      assert.equal(recent.status, 200);
      if (ids(recent).includes(id)) shown.push('items-recent');
      const byTag = await s.api.get(`/api/uploads?tag=${tag}`);
      if (ids(byTag).includes(id)) shown.push('uploads tag=');
      const byUser = await s.api.get(`/api/uploads?user=${owner.username}`);
      if (ids(byUser).includes(id)) shown.push('uploads user=');
      const tags = await s.api.get(`/api/tags?q=${tag}`);
      assert.equal(tags.status, 200);
      const names = (tags.body.tags as Array<{ name: string }>).map((t) => t.name).sort();
      if (names.length) shown.push(`tags ${names.join(',')}`);
      return shown;
    };
    const everywhere = [
      'uploads sort=new',
      'uploads sort=top',
      'uploads sort=hot',
      'uploads sort=best',
      'uploads',
      'items-recent',
      'uploads tag=',
      'uploads user=',
      `tags ${tag},${tag}-two`,
    ];
    const status = async (s: ServerProcess, token?: string) =>
      (await s.api.get(`/api/upload/${id}`, { ...(token ? { token } : {}) })).status;
    const imageStatus = async (s: ServerProcess) => (await s.api.get(`/api/image/${id}?size=thumb`)).status;

    assert.deepEqual(await shownBy(b), everywhere, 'B lists it (and has cached those pages)');

    // Hold through A.
    const held = await act(a, id, 'hold');
    assert.equal(held.status, 200, held.text);
    assert.equal(held.body.moderation, 'held');
    assert.deepEqual(await shownBy(b), [], 'B lists it nowhere from its very next request');
    assert.equal(await status(b), 404, 'held: 404 to the public');
    assert.equal(await status(b, other.token), 404, 'held: 404 to another user');
    assert.equal(await imageStatus(b), 404);
    assert.equal(await status(b, owner.token), 200, 'its owner still sees it');
    assert.equal(await status(b, admin.token), 200, 'and the admins');

    // Approve through A: back everywhere in B.
    const approved = await act(a, id, 'approve');
    assert.equal(approved.status, 200, approved.text);
    assert.equal(approved.body.moderation, 'visible');
    assert.deepEqual(await shownBy(b), everywhere, 'approve brings it back in B at once');
    assert.equal(await status(b, other.token), 200);
    assert.equal(await imageStatus(b), 200);

    // Remove through A: gone in B, 410 to all but admins.
    const removed = await act(a, id, 'remove');
    assert.equal(removed.status, 200, removed.text);
    assert.equal(removed.body.moderation, 'removed');
    assert.deepEqual(await shownBy(b), [], 'a removal vanishes from B on its very next request');
    for (const token of [undefined, other.token, owner.token]) {
      const r = await b.api.get(`/api/upload/${id}`, { ...(token ? { token } : {}) });
      assert.equal(r.status, 410, r.text);
      assert.equal(r.body.error, 'removed');
    }
    assert.equal(await imageStatus(b), 410);
    const tombstone = await b.api.get(`/api/upload/${id}`, { token: admin.token });
    assert.equal(tombstone.status, 200, tombstone.text);
    assert.equal(tombstone.body.moderation, 'removed');
    const modlog = await b.api.get('/api/modlog?limit=50');
    const actions = (modlog.body.entries as Array<{ action: string; target: { id: string } }>)
      .filter((e) => e.target.id === id)
      .map((e) => e.action);
    assert.deepEqual(actions, ['remove', 'approve', 'hold'], 'every action is in the modlog, newest first');
  });

  test('20 concurrent reports by 20 users across the processes hold the upload exactly once', async () => {
    const owner = await registerUser(servers[0]!.api);
    const up = await uploadImage(
      servers[1]!.api,
      owner.token,
      await photoJpeg({ width: 320, height: 240, seed: 16_002 }),
    );
    assert.equal(up.status, 201, up.text);
    const id = up.body.id as string;
    const reporters = await Promise.all(Array.from({ length: 20 }, (_, i) => registerUser(servers[i % 3]!.api)));
    // Every process has the upload in its feed cache before the reports.
    for (const s of servers) assert.equal((await s.api.get('/api/uploads?limit=50')).body.uploads[0].id, id);

    const replies = await Promise.all(
      reporters.map((u, i) =>
        servers[i % 3]!.api.post(
          `/api/upload/${id}/report`,
          { reason: 'spam', note: `report ${i}` },
          { token: u.token },
        ),
      ),
    );
    // A reporter whose request reached the upload after it was held cannot see it any more: 404.
    const statuses = replies.map((r) => r.status);
    assert.deepEqual(
      statuses.filter((s) => s !== 201 && s !== 404),
      [],
      replies.map((r) => r.text).join('\n'),
    );
    const accepted = statuses.filter((s) => s === 201).length;
    assert.ok(accepted >= 3, `${accepted} reports accepted`);

    // The admins' view: the public one does not name a held upload.
    const modlog = await servers[2]!.api.get('/api/modlog?limit=50', { token: admin.token });
    const holds = (modlog.body.entries as Array<{ action: string; target: { id: string } }>).filter(
      (e) => e.target.id === id,
    );
    assert.deepEqual(
      holds.map((e) => e.action),
      ['auto_hold'],
      'exactly one automatic hold',
    );
    for (const s of servers) {
      assert.equal((await s.api.get(`/api/upload/${id}`)).status, 404, `${s.url} hides the held upload`);
      assert.ok(!(await s.api.get('/api/uploads?limit=50')).body.uploads.some((u: { id: string }) => u.id === id));
    }
    const record = await servers[0]!.api.get(`/api/upload/${id}`, { token: admin.token });
    assert.equal(record.body.moderation, 'held');
    // The queue counts the reports that were accepted, held first.
    const queue = await servers[1]!.api.get('/api/admin/moderation?status=open', { token: admin.token });
    assert.equal(queue.status, 200, queue.text);
    const item = (queue.body.items as Array<{ upload: { id: string }; reports: { count: number } }>).find(
      (i) => i.upload.id === id,
    );
    assert.equal(item?.reports.count, accepted);
  });
});
