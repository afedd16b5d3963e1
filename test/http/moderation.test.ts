/**
 * API.md Moderation through the real HTTP API (both databases): states honoured by every read path, reports and
 * the automatic hold, the queue, actions with the blocklist, the blocklist routes and its job, bans, the modlog.
 * The multi-process checks (bans and states in every process) are in moderation-cluster.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { currentMetrics, stageRuns, startApp, type TestApp } from '../support/app.ts';
import { TRUST_EVERY_REPORTER, apiToken, registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { countUploads, diskState, queueKeyMismatches, uploadFields, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { banRemovalDone, eventually } from '../support/jobs.ts';

let app: TestApp;
let owner: TestUser;
let other: TestUser;
let admin: TestUser;
let seed = 5000;

before(async () => {
  // Fresh accounts count as reporters here (the trust rule has its own tests in report-trust.test.ts).
  app = await startApp({ REPORT_HOLD_THRESHOLD: '3', ...TRUST_EVERY_REPORTER });
  owner = await registerUser(app.api);
  other = await registerUser(app.api);
  admin = await registerAdmin(app, `mod_${Math.random().toString(36).slice(2, 8)}`);
});
after(() => app.close());

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

async function image(user: TestUser = owner, fields: Record<string, string> = {}) {
  const bytes = await photoJpeg({ width: 480, height: 360, seed: seed++ });
  const r = await uploadImage(app.api, user.token, bytes, fields);
  assert.equal(r.status, 201, r.text);
  return { id: r.body.id as string, bytes };
}

async function link(user: TestUser = owner, tags = '') {
  const r = await uploadFields(app.api, user.token, {
    upload_type: 'link',
    external_url: `https://example.com/${Math.random()}`,
    tags,
  });
  assert.equal(r.status, 201, r.text);
  return r.body.id as string;
}

const act = (id: string, body: Record<string, unknown>, token = admin.token) =>
  app.api.post(`/api/admin/uploads/${id}/moderation`, body, { token });

/** Every public listing and search, as ids (or tag names): what "absent from every read path" is checked on. */
async function publicViews(tag: string, username: string) {
  const ids = async (path: string) => {
    const r = await app.api.get(path);
    assert.equal(r.status, 200, `${path}: ${r.text}`);
    return (r.body.uploads ?? r.body.items).map((u: { id: string }) => u.id) as string[];
  };
  const views: Record<string, string[]> = {};
  for (const sort of ['new', 'top', 'hot', 'best']) views[sort] = await ids(`/api/uploads?sort=${sort}&limit=50`);
  views.tag = await ids(`/api/uploads?tag=${tag}`);
  views.user = await ids(`/api/uploads?user=${username}`);
  views.type = await ids('/api/uploads?type=link&limit=50');
  views.recent = await ids('/api/items-recent?limit=50');
  const tags = await app.api.get(`/api/tags?q=${tag}`);
  views.tags = tags.body.tags.map((t: { name: string }) => t.name);
  return views;
}

async function modlog(token?: string) {
  const r = await app.api.get('/api/modlog?limit=50', token ? { token } : {});
  assert.equal(r.status, 200, r.text);
  return r.body.entries as Array<{
    id: string;
    action: string;
    target: { type: string; id: string | null };
    reason: string;
    moderator?: { id: string; username: string } | null;
  }>;
}

describe('admin routes', () => {
  test('401 without a user, 403 forbidden to a user who is not an admin', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/api/admin/moderation'],
      ['POST', `/api/admin/uploads/${id}/moderation`, { action: 'approve' }],
      ['GET', '/api/admin/blocklist'],
      ['POST', '/api/admin/blocklist', { entries: [{ sha256: 'a'.repeat(64) }] }],
      ['DELETE', `/api/admin/blocklist/${id}`],
      ['GET', '/api/admin/users'],
      ['POST', `/api/admin/users/${id}/ban`, { reason: 'x' }],
      ['DELETE', `/api/admin/users/${id}/ban`],
      ['GET', '/api/admin/jobs'],
      ['GET', `/api/admin/jobs/${id}`],
    ];
    for (const [method, path, body] of routes) {
      const anon = await app.api.request(method, path, body);
      assert.equal(anon.status, 401, `${method} ${path}`);
      const user = await app.api.request(method, path, body, { token: other.token });
      assert.equal(user.status, 403, `${method} ${path}`);
      assert.equal(user.body.error, 'forbidden');
    }
  });
});

describe('held uploads', () => {
  test('are absent from every listing, feed, tag list and search, and reachable by owner and admins only', async () => {
    const tag = `held${Math.random().toString(36).slice(2, 8)}`;
    const id = await link(owner, tag);
    const before = await publicViews(tag, owner.username);
    for (const [view, list] of Object.entries(before))
      assert.ok(list.includes(view === 'tags' ? tag : id), `visible in ${view} first`);

    const held = await act(id, { action: 'hold', reason: 'looking into it' });
    assert.equal(held.status, 200, held.text);
    assert.equal(held.body.moderation, 'held');
    // The very next request shows it (the feed caches are invalidated like any other write).
    const after = await publicViews(tag, owner.username);
    for (const [view, list] of Object.entries(after))
      assert.ok(!list.includes(view === 'tags' ? tag : id), `absent from ${view}`);

    const anon = await app.api.get(`/api/upload/${id}`);
    assert.equal(anon.status, 404);
    assert.equal(anon.body.error, 'not_found');
    assert.equal((await app.api.get(`/api/upload/${id}`, { token: other.token })).status, 404);
    assert.equal((await app.api.get(`/api/uploads/${id}/tags`, { token: other.token })).status, 404);
    const vote = await app.api.post('/api/vote', { uploadId: id, vote: 'fucks' }, { token: other.token });
    assert.equal(vote.status, 404);
    const report = await app.api.post(`/api/upload/${id}/report`, { reason: 'spam' }, { token: other.token });
    assert.equal(report.status, 404);
    const own = await app.api.get(`/api/upload/${id}`, { token: owner.token });
    assert.equal(own.status, 200);
    assert.equal(own.body.moderation, 'held');
    assert.equal((await app.api.get(`/api/upload/${id}`, { token: admin.token })).body.moderation, 'held');
    const profile = await app.api.get('/api/profile', { token: owner.token });
    assert.ok(
      profile.body.uploads.some((u: { id: string }) => u.id === id),
      'the owner still finds it in the profile',
    );

    const approved = await act(id, { action: 'approve', reason: 'fine after all' });
    assert.equal(approved.body.moderation, 'visible');
    const back = await publicViews(tag, owner.username);
    for (const [view, list] of Object.entries(back))
      assert.ok(list.includes(view === 'tags' ? tag : id), `back in ${view}`);
  });

  test('their image is served to owner and admins only; another user storing the same bytes is not told', async () => {
    const { id, bytes } = await image();
    await act(id, { action: 'hold', reason: 'r' });
    assert.equal((await app.api.get(`/api/image/${id}?size=thumb`)).status, 404);
    const own = await app.api.get(`/api/image/${id}?size=thumb`, { token: owner.token });
    assert.equal(own.status, 200);
    assert.equal(own.headers.get('cache-control'), 'private, no-store', 'no shared cache keeps a held image');
    assert.equal((await app.api.get(`/api/image/${id}?size=thumb`, { token: admin.token })).status, 200);
    // Not a duplicate notice naming the held upload: a new upload.
    const twin = await uploadImage(app.api, other.token, bytes);
    assert.equal(twin.status, 201, twin.text);
    assert.notEqual(twin.body.id, id);
  });
});

describe('removed uploads', () => {
  test('lose files, votes and tag links; 410 to everyone but admins, who read the tombstone', async () => {
    const tag = `gone${Math.random().toString(36).slice(2, 8)}`;
    const { id } = await image(owner, { tags: tag });
    await app.api.post('/api/vote', { uploadId: id, vote: 'fucks' }, { token: other.token });
    const filesBefore = (await diskState(app)).media.length;

    const r = await act(id, { action: 'remove', reason: 'spam' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.moderation, 'removed');
    assert.equal(r.body.upvotes, 0);
    assert.deepEqual(r.body.tags, []);
    assert.equal((await diskState(app)).media.length, filesBefore - 3, 'its three variants are gone');

    for (const token of [undefined, owner.token, other.token]) {
      const get = await app.api.get(`/api/upload/${id}`, token ? { token } : {});
      assert.equal(get.status, 410);
      assert.equal(get.body.error, 'removed');
      assert.equal((await app.api.get(`/api/image/${id}`, token ? { token } : {})).status, 410);
    }
    const tomb = await app.api.get(`/api/upload/${id}`, { token: admin.token });
    assert.equal(tomb.status, 200);
    assert.equal(tomb.body.moderation, 'removed');
    const vote = await app.api.post('/api/vote', { uploadId: id, vote: 'fucks' }, { token: other.token });
    assert.equal(vote.status, 410);
    assert.equal((await app.api.del(`/api/upload/${id}`, { token: owner.token })).status, 410);
    const tags = await app.api.get(`/api/tags?q=${tag}`);
    assert.deepEqual(tags.body.tags, []);
    const profile = await app.api.get('/api/profile', { token: owner.token });
    assert.ok(!profile.body.uploads.some((u: { id: string }) => u.id === id));
  });

  test('files another upload shares stay', async () => {
    // A private upload first: the owner's later upload of the same bytes is stored anew, sharing its files.
    const { id: twinId, bytes } = await image(other, { is_private: 'true' });
    const filesBefore = (await diskState(app)).media.length;
    const mine = await uploadImage(app.api, owner.token, bytes);
    assert.equal(mine.status, 201, mine.text);
    assert.equal((await diskState(app)).media.length, filesBefore, 'shared, not copied');
    assert.equal((await act(mine.body.id, { action: 'remove', reason: 'x' })).status, 200);
    assert.equal((await diskState(app)).media.length, filesBefore, 'the twin still uses them');
    const thumb = await app.api.get(`/api/image/${twinId}?size=thumb`);
    assert.equal(thumb.status, 200);
  });
});

describe('reports', () => {
  test('one per user (201, then 200 with the first), validated, counted per distinct reporter', async () => {
    const id = await link();
    const first = await app.api.post(
      `/api/upload/${id}/report`,
      { reason: 'spam', note: 'ads' },
      { token: other.token },
    );
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(Object.keys(first.body).sort(), ['created_at', 'id', 'note', 'reason', 'upload_id']);
    const again = await app.api.post(`/api/upload/${id}/report`, { reason: 'sexual' }, { token: other.token });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);

    const bad = await app.api.post(`/api/upload/${id}/report`, { reason: 'boring' }, { token: owner.token });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /reason/);
    const long = await app.api.post(
      `/api/upload/${id}/report`,
      { reason: 'other', note: 'x'.repeat(501) },
      { token: owner.token },
    );
    assert.equal(long.status, 400);
    assert.match(long.body.message, /500/);
    assert.equal((await app.api.post(`/api/upload/${id}/report`, { reason: 'spam' })).status, 401);
    const unknown = '00000000-0000-4000-8000-000000000001';
    assert.equal(
      (await app.api.post(`/api/upload/${unknown}/report`, { reason: 'spam' }, { token: owner.token })).status,
      404,
    );

    const queue = await app.api.get('/api/admin/moderation?limit=50', { token: admin.token });
    const item = queue.body.items.find((i: { upload: { id: string } }) => i.upload.id === id);
    assert.ok(item, 'the reported upload is in the open queue');
    assert.equal(item.reports.count, 1);
    assert.deepEqual(item.reports.reasons, { spam: 1 });
    assert.deepEqual(item.reports.notes, ['ads']);
    assert.equal(item.person_flag, false);
  });

  test('20 concurrent reporters hold the upload exactly once (one auto_hold line)', async () => {
    const id = await link();
    const reporters = await Promise.all(Array.from({ length: 20 }, () => registerUser(app.api)));
    const replies = await Promise.all(
      reporters.map((u) => app.api.post(`/api/upload/${id}/report`, { reason: 'harassment' }, { token: u.token })),
    );
    // Once held, the upload is one the later reporters cannot see: 404 (API.md Reports).
    const accepted = replies.filter((r) => r.status === 201).length;
    assert.ok(
      replies.every((r) => r.status === 201 || r.status === 404),
      replies.map((r) => r.status).join(),
    );
    assert.ok(accepted >= 3, `${accepted} reports accepted`);
    assert.equal((await app.api.get(`/api/upload/${id}`)).status, 404, 'held');
    // The admins' view: the public one does not name a held upload.
    const holds = (await modlog(admin.token)).filter((e) => e.action === 'auto_hold' && e.target.id === id);
    assert.equal(holds.length, 1);
    assert.match(holds[0]!.reason, /reported by 3 users, 3 of them trusted/);
    const queue = await app.api.get('/api/admin/moderation?limit=50', { token: admin.token });
    assert.equal(queue.body.items[0].upload.moderation, 'held', 'held items come first');
    const item = queue.body.items.find((i: { upload: { id: string } }) => i.upload.id === id);
    assert.equal(item.reports.count, accepted);
  });

  test('approve closes the reports: the upload is visible and leaves the open queue for the closed one', async () => {
    const id = await link();
    await app.api.post(`/api/upload/${id}/report`, { reason: 'spam' }, { token: other.token });
    const r = await act(id, { action: 'approve', reason: 'not spam' });
    assert.equal(r.status, 200);
    const open = await app.api.get('/api/admin/moderation?limit=50', { token: admin.token });
    assert.ok(!open.body.items.some((i: { upload: { id: string } }) => i.upload.id === id));
    const closed = await app.api.get('/api/admin/moderation?status=closed&limit=50', { token: admin.token });
    const item = closed.body.items.find((i: { upload: { id: string } }) => i.upload.id === id);
    assert.ok(item, 'in the closed queue');
    assert.equal(item.reports.count, 1);
  });
});

describe('the queue pages by cursor', () => {
  type Item = { kind: string; id?: string; upload?: { id: string } };
  const itemId = (i: Item) => i.upload?.id ?? i.id ?? '';
  const page = async (status: string, cursor: string | null) => {
    const q = `status=${status}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
    const r = await app.api.get(`/api/admin/moderation?${q}`, { token: admin.token });
    assert.equal(r.status, 200, r.text);
    return r.body as { items: Item[]; page: number; has_more: boolean; next_cursor: string | null };
  };

  test('acting on each page as it comes skips nothing and shows nothing twice; closed pages on too', async () => {
    const ids = [await link(), await link(), await link(), await link(), await link()];
    const second = await registerUser(app.api);
    for (const [n, id] of ids.entries()) {
      await app.api.post(`/api/upload/${id}/report`, { reason: 'spam' }, { token: other.token });
      if (n % 2) await app.api.post(`/api/upload/${id}/report`, { reason: 'other' }, { token: second.token });
    }
    assert.equal((await act(ids[4]!, { action: 'hold', reason: 'look closer' })).status, 200);
    const all = await app.api.get('/api/admin/moderation?limit=50', { token: admin.token });
    const before = (all.body.items as Item[]).map(itemId);
    assert.ok(before.length < 50 && ids.every((id) => before.includes(id)));
    // Held first, then most reports: ids[4] (held) before ids[1] and ids[3] (2 reports) before the rest.
    const at = (id: string) => before.indexOf(id);
    assert.ok(at(ids[4]!) < at(ids[1]!) && at(ids[1]!) < at(ids[0]!) && at(ids[3]!) < at(ids[2]!));
    const seen: string[] = [];
    const approved: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const p = await page('open', cursor);
      assert.equal(p.page, pages + 1, 'pages are counted on');
      seen.push(...p.items.map(itemId));
      // The moderator approves the page's uploads before asking for the next: they leave the open queue.
      for (const i of p.items) {
        if (i.upload && ids.includes(i.upload.id)) {
          assert.equal((await act(i.upload.id, { action: 'approve', reason: 'fine' })).status, 200);
          approved.push(i.upload.id);
        }
      }
      cursor = p.next_cursor;
      assert.equal(p.has_more, cursor !== null);
    } while (cursor && ++pages < 40);
    assert.deepEqual(seen, before, 'every open item once, in the queue order, though each page was acted on');
    assert.deepEqual(approved.toSorted(), ids.toSorted());
    // Number pages would have skipped: after approving page 1, page 2 starts 2 items further on.

    const closed: string[] = [];
    cursor = null;
    pages = 0;
    do {
      const p = await page('closed', cursor);
      closed.push(...p.items.map(itemId));
      cursor = p.next_cursor;
    } while (cursor && ++pages < 200);
    assert.equal(new Set(closed).size, closed.length, 'no closed item twice');
    // Most recently acted on first: the last approved leads.
    assert.deepEqual(
      closed.filter((id) => ids.includes(id)),
      approved.toReversed(),
    );

    const first = await page('closed', null);
    assert.ok(first.next_cursor, 'five closed items make more than a page of 2');
    const foreign = await app.api.get(`/api/admin/moderation?status=open&limit=2&cursor=${first.next_cursor}`, {
      token: admin.token,
    });
    assert.equal(foreign.status, 400);
    assert.equal(foreign.body.error, 'invalid_cursor');
  });
});

describe('reports are rate limited', () => {
  test('RATE_LIMIT_REPORT per user: 429 with Retry-After', async () => {
    const limited = await startApp({ RATE_LIMIT_REPORT: '2/1h' });
    try {
      const u = await registerUser(limited.api);
      const ids = [];
      for (let i = 0; i < 3; i++) {
        const r = await uploadFields(limited.api, u.token, {
          upload_type: 'link',
          external_url: `https://example.com/r${i}`,
        });
        ids.push(r.body.id as string);
      }
      const reporter = await registerUser(limited.api);
      const statuses = [];
      for (const id of ids) {
        const r = await limited.api.post(`/api/upload/${id}/report`, { reason: 'spam' }, { token: reporter.token });
        statuses.push(r.status);
        if (r.status === 429) assert.ok(Number(r.headers.get('retry-after')) >= 1);
      }
      assert.deepEqual(statuses, [201, 201, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe('blocklist', () => {
  const stages = () => stageRuns(app);

  test('remove + block exact: the same bytes are refused before any decoding; nothing is stored', async () => {
    const { id, bytes } = await image();
    assert.equal((await act(id, { action: 'remove', reason: 'scam', block: 'exact' })).status, 200);
    const rows = await countUploads(app);
    const files = (await diskState(app)).media.length;
    const before = await stages();
    const r = await uploadImage(app.api, other.token, bytes);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error, 'blocked_content');
    assert.doesNotMatch(r.body.message, /[0-9a-f]{16}/, 'nothing says which entry matched');
    assert.deepEqual(await stages(), before, 'not even decoded');
    assert.equal(await countUploads(app), rows);
    const disk = await diskState(app);
    assert.equal(disk.media.length, files);
    assert.deepEqual([disk.staging, disk.tmp], [[], []]);
    // The owner too.
    assert.equal((await uploadImage(app.api, owner.token, bytes)).body.error, 'blocked_content');
  });

  test('remove + block near: a re-encoded copy is refused once hashed, before detection and encoding', async () => {
    const { id, bytes } = await image();
    assert.equal((await act(id, { action: 'remove', reason: 'scam', block: 'near' })).status, 200);
    const copy = await sharp(bytes).resize(400).webp({ quality: 55 }).toBuffer();
    const rows = await countUploads(app);
    const before = await stages();
    const r = await uploadImage(app.api, other.token, copy, {}, 'copy.webp');
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error, 'blocked_content');
    const after = await stages();
    assert.equal(after.phash, before.phash + 1, 'hashed');
    assert.equal(after.encode, before.encode, 'never encoded');
    assert.equal(await countUploads(app), rows);
    assert.deepEqual((await diskState(app)).staging, []);
  });

  test('block applies to images only (400 for a link; nothing changes)', async () => {
    const id = await link();
    const r = await act(id, { action: 'remove', reason: 'x', block: 'exact' });
    assert.equal(r.status, 400);
    assert.match(r.body.message, /image/);
    assert.equal((await app.api.get(`/api/upload/${id}`)).status, 200);
  });

  test('import: added and skipped, validated, listed, deleted; new entries hold the uploads they match', async () => {
    const { id, bytes } = await image(other);
    const entry = { sha256: sha256(bytes), reason: 'known scam' };
    const bad = await app.api.post(
      '/api/admin/blocklist',
      { entries: [{ reason: 'no hash' }] },
      { token: admin.token },
    );
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /sha256|phash/);
    const badHex = await app.api.post('/api/admin/blocklist', { entries: [{ phash: 'xyz' }] }, { token: admin.token });
    assert.equal(badHex.status, 400);
    assert.match(badHex.body.message, /phash must be 16 hexadecimal/);

    const dry = await app.api.post('/api/admin/blocklist?dry_run=true', { entries: [entry] }, { token: admin.token });
    assert.deepEqual(dry.body, { added: 1, skipped: 0, matches: 1 });
    assert.equal((await app.api.get(`/api/upload/${id}`)).status, 200, 'a dry run changes nothing');

    const added = await app.api.post('/api/admin/blocklist', { entries: [entry, entry] }, { token: admin.token });
    assert.equal(added.status, 200, added.text);
    assert.deepEqual({ ...added.body, job: undefined }, { added: 1, skipped: 1, job: undefined });
    await eventually(async () => (await app.api.get(`/api/upload/${id}`)).status === 404, 'the match is held');
    const hold = (await modlog(admin.token)).find((e) => e.action === 'auto_hold' && e.target.id === id);
    assert.ok(hold, 'an auto_hold line');
    // The hold is a durable job too, listed with its progress (entries handled of those added).
    await eventually(async () => {
      const r = await app.api.get('/api/admin/jobs?status=done&limit=100', { token: admin.token });
      return r.body.jobs.some(
        (j: {
          id: string;
          kind: string;
          progress: { done: number; total: number };
          moderator: { id: string } | null;
        }) =>
          j.id === added.body.job.id &&
          j.kind === 'blocklist_hold' &&
          j.moderator?.id === admin.id &&
          j.progress.done === 1 &&
          j.progress.total === 1,
      );
    }, 'the blocklist_hold job is listed as done');

    const list = await app.api.get('/api/admin/blocklist?limit=50', { token: admin.token });
    const listed = list.body.entries.find((e: { sha256: string }) => e.sha256 === entry.sha256);
    assert.ok(listed);
    assert.equal(listed.source, 'import');
    assert.equal(listed.reason, 'known scam');
    const again = await app.api.post('/api/admin/blocklist', { entries: [entry] }, { token: admin.token });
    assert.deepEqual(again.body, { added: 0, skipped: 1, job: null });

    assert.equal((await uploadImage(app.api, owner.token, bytes)).body.error, 'blocked_content');
    const del = await app.api.del(`/api/admin/blocklist/${listed.id}`, { token: admin.token });
    assert.deepEqual(del.body, { success: true });
    assert.equal((await app.api.del(`/api/admin/blocklist/${listed.id}`, { token: admin.token })).status, 404);
    assert.equal((await uploadImage(app.api, owner.token, bytes)).status, 201, 'allowed again once unblocked');
    const lines = await modlog();
    assert.ok(lines.some((e) => e.action === 'block' && e.target.id === listed.id));
    assert.ok(lines.some((e) => e.action === 'unblock' && e.target.id === listed.id));
  });

  test('more than 10 000 entries in one request: 400 naming the limit', async () => {
    const entries = Array.from({ length: 10_001 }, (_, i) => ({ phash: i.toString(16).padStart(16, '0') }));
    const r = await app.api.post('/api/admin/blocklist', { entries }, { token: admin.token });
    assert.equal(r.status, 400);
    assert.match(r.body.message, /10000/);
  });
});

describe('bans', () => {
  test('refuse every authenticated request (JWT, API token, cookie) and login; unban restores them', async () => {
    const victim = await registerUser(app.api);
    const token = await apiToken(app.api, victim);
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const ban = await app.api.post(
      `/api/admin/users/${victim.id}/ban`,
      { reason: 'spam bot', until, remove_uploads: false },
      { token: admin.token },
    );
    assert.equal(ban.status, 200, ban.text);
    assert.equal(ban.body.banned_until, until);
    assert.equal(ban.body.user.banned_until, until);

    for (const t of [victim.token, token]) {
      const r = await app.api.get('/api/profile', { token: t });
      assert.equal(r.status, 403);
      assert.equal(r.body.error, 'banned');
      assert.match(r.body.message, new RegExp(until.slice(0, 10)));
      // Even a public read, when it carries their credential.
      assert.equal((await app.api.get('/api/uploads', { token: t })).status, 403);
    }
    const cookie = await app.api.get('/api/profile', { headers: { cookie: `auth-token=${victim.token}` } });
    assert.equal(cookie.status, 403);
    assert.equal(cookie.body.error, 'banned');
    const login = await app.api.post('/api/auth', { action: 'login', email: victim.email, password: victim.password });
    assert.equal(login.status, 403);
    assert.equal(login.body.error, 'banned');
    const wrong = await app.api.post('/api/auth', { action: 'login', email: victim.email, password: 'wrong-password' });
    assert.equal(wrong.status, 401, 'a wrong password is still 401: the ban is not revealed to a guesser');

    const users = await app.api.get(`/api/admin/users?q=${victim.username.slice(0, 6)}`, { token: admin.token });
    const listed = users.body.users.find((u: { id: string }) => u.id === victim.id);
    assert.equal(listed.banned_until, until);

    assert.deepEqual((await app.api.del(`/api/admin/users/${victim.id}/ban`, { token: admin.token })).body, {
      success: true,
    });
    assert.equal((await app.api.get('/api/profile', { token })).status, 200);
    const again = await app.api.post('/api/auth', { action: 'login', email: victim.email, password: victim.password });
    assert.equal(again.status, 200);
    const lines = await modlog();
    assert.ok(lines.some((e) => e.action === 'ban' && e.target.id === victim.id && e.reason === 'spam bot'));
    assert.ok(lines.some((e) => e.action === 'unban' && e.target.id === victim.id));
  });

  test('permanent with remove_uploads: a durable job removes all their uploads; admins cannot be banned', async () => {
    const victim = await registerUser(app.api);
    const ids = [await link(victim), (await image(victim)).id];
    const ban = await app.api.post(
      `/api/admin/users/${victim.id}/ban`,
      { reason: 'troll', until: null, remove_uploads: true },
      { token: admin.token },
    );
    assert.equal(ban.status, 200, ban.text);
    assert.equal(ban.body.banned_until, 'permanent');
    // The removal is a job queued with the ban (API.md Bans): seen in the jobs' listing, done once it has run.
    const job = await banRemovalDone(app.api, admin.token, victim.id);
    assert.deepEqual(job.progress, { done: 2, total: 2 });
    assert.deepEqual(job.target, { type: 'user', id: victim.id });
    assert.equal(job.reason, 'account banned: troll');
    assert.deepEqual(job.moderator, { id: admin.id, username: admin.username });
    const one = await app.api.get(`/api/admin/jobs/${job.id}`, { token: admin.token });
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.body, job);
    const listed = await app.api.get(`/api/admin/users?q=${victim.username}`, { token: admin.token });
    assert.equal(listed.body.users[0].uploads, 0);
    for (const id of ids) assert.equal((await app.api.get(`/api/upload/${id}`)).status, 410);
    const lines = await modlog();
    for (const id of ids) assert.ok(lines.some((e) => e.action === 'remove' && e.target.id === id));
    const login = await app.api.post('/api/auth', { action: 'login', email: victim.email, password: victim.password });
    assert.match(login.body.message, /permanently/);

    const other_admin = await registerAdmin(app);
    const r = await app.api.post(`/api/admin/users/${other_admin.id}/ban`, { reason: 'x' }, { token: admin.token });
    assert.equal(r.status, 400);
    assert.match(r.body.message, /admin/);
    assert.equal((await app.api.get('/api/profile', { token: other_admin.token })).status, 200);
  });

  test('jobs: a bad status is 400, an unknown job 404', async () => {
    const bad = await app.api.get('/api/admin/jobs?status=sleeping', { token: admin.token });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /status must be/);
    const unknown = await app.api.get('/api/admin/jobs/00000000-0000-4000-8000-000000000003', { token: admin.token });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error, 'not_found');
  });

  test('until in the past: 400; unknown user: 404', async () => {
    const victim = await registerUser(app.api);
    const past = await app.api.post(
      `/api/admin/users/${victim.id}/ban`,
      { reason: 'x', until: '2020-01-01T00:00:00.000Z' },
      { token: admin.token },
    );
    assert.equal(past.status, 400);
    assert.match(past.body.message, /until/);
    const unknown = await app.api.post(
      '/api/admin/users/00000000-0000-4000-8000-000000000002/ban',
      { reason: 'x' },
      { token: admin.token },
    );
    assert.equal(unknown.status, 404);
  });
});

describe('modlog', () => {
  test('public without the moderator; admins see who acted (null for automatic actions)', async () => {
    const id = await link();
    await act(id, { action: 'approve', reason: 'check' });
    const pub = (await modlog()).find((e) => e.action === 'approve' && e.target.id === id);
    assert.ok(pub, 'a visible public upload is named in the public view');
    assert.equal('moderator' in pub, false);
    assert.deepEqual(pub.target, { type: 'upload', id });
    assert.equal(pub.reason, 'check');
    const mine = (await modlog(admin.token)).find((e) => e.action === 'approve' && e.target.id === id);
    assert.deepEqual(mine?.moderator, { id: admin.id, username: admin.username });
    const auto = (await modlog(admin.token)).find((e) => e.action === 'auto_hold');
    if (auto) assert.equal(auto.moderator, null);
  });

  test('the public view never names an upload an anonymous reader could not find; admins see every id', async () => {
    // A private upload held by a blocklist match, then approved (still private).
    const blocked = await image(owner, { is_private: 'true' });
    const added = await app.api.post(
      '/api/admin/blocklist',
      { entries: [{ sha256: sha256(blocked.bytes), reason: 'known' }] },
      { token: admin.token },
    );
    assert.equal(added.status, 200, added.text);
    await eventually(
      async () => (await app.api.get(`/api/upload/${blocked.id}`, { token: owner.token })).body.moderation === 'held',
      'the private match is held',
    );
    assert.equal((await act(blocked.id, { action: 'approve', reason: 'a false match' })).status, 200);
    // A private upload held by reports.
    const reported = await link(owner);
    assert.equal(
      (await app.api.patch(`/api/upload/${reported}/privacy`, { is_private: true }, { token: owner.token })).status,
      200,
    );
    for (const u of await Promise.all([1, 2, 3].map(() => registerUser(app.api))))
      assert.equal(
        (await app.api.post(`/api/upload/${reported}/report`, { reason: 'spam' }, { token: u.token })).status,
        201,
      );
    // A public upload held by a moderator (held now: unnamed), one removed while private, and a public one.
    const held = await link(owner);
    assert.equal((await act(held, { action: 'hold', reason: 'looking' })).status, 200);
    const gonePrivate = await link(owner);
    assert.equal(
      (await app.api.patch(`/api/upload/${gonePrivate}/privacy`, { is_private: true }, { token: owner.token })).status,
      200,
    );
    assert.equal((await act(gonePrivate, { action: 'remove', reason: 'spam' })).status, 200);
    const open = await link(owner);
    assert.equal((await act(open, { action: 'approve', reason: 'fine' })).status, 200);

    const hidden = new Map([
      [blocked.id, ['approve', 'auto_hold']],
      [reported, ['auto_hold']],
      [held, ['hold']],
      [gonePrivate, ['remove']],
    ]);
    const full = await modlog(admin.token);
    const pub = new Map((await modlog()).map((e) => [e.id, e]));
    for (const [id, actions] of hidden) {
      const lines = full.filter((e) => e.target.id === id);
      assert.deepEqual(
        lines.map((e) => e.action),
        actions,
        `admins see every line of ${id}`,
      );
      for (const line of lines)
        assert.deepEqual(pub.get(line.id)?.target, { type: 'upload', id: null }, `${line.action} of ${id} unnamed`);
    }
    assert.ok(![...pub.values()].some((e) => e.target.id && hidden.has(e.target.id)), 'no hidden id anywhere');
    const openLine = full.find((e) => e.target.id === open)!;
    assert.deepEqual(pub.get(openLine.id)?.target, { type: 'upload', id: open }, 'a visible public upload is named');
    // Another user sees the public view; judged by the state now: approved again, the held one is named.
    const others = await modlog(other.token);
    assert.ok(!others.some((e) => e.target.id === held));
    assert.equal((await act(held, { action: 'approve', reason: 'fine after all' })).status, 200);
    const after = await modlog();
    assert.ok(after.some((e) => e.action === 'hold' && e.target.id === held));
  });

  test('append-only: the database refuses an update or a delete of a line', async () => {
    const db = app.composed.db.db();
    const line = await db.selectFrom('modlog').select('id').limit(1).executeTakeFirstOrThrow();
    await assert.rejects(
      db.updateTable('modlog').set({ reason: 'rewritten' }).where('id', '=', line.id).execute(),
      /append-only/,
    );
    await assert.rejects(db.deleteFrom('modlog').where('id', '=', line.id).execute(), /append-only/);
  });
});

describe('metrics', () => {
  test('reports received, queue depth, actions by kind, blocklist size, blocked uploads', async () => {
    const text = await currentMetrics(app);
    const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
    assert.ok(value(/^pixvote_reports_received_total (\d+)$/m) >= 5);
    assert.ok(value(/^pixvote_moderation_queue_depth (\d+)$/m) >= 1);
    assert.ok(value(/^pixvote_moderation_actions_total\{action="remove"\} (\d+)$/m) >= 1);
    assert.ok(value(/^pixvote_moderation_actions_total\{action="auto_hold"\} (\d+)$/m) >= 1);
    assert.ok(value(/^pixvote_blocklist_entries (\d+)$/m) >= 2);
    assert.ok(value(/^pixvote_blocked_uploads_total (\d+)$/m) >= 3);
  });
});

describe("the open queue's index", () => {
  test("after this file's reports, holds, removals and bans, each upload's queue columns match its rows", async () => {
    const queued = await app.composed.db
      .db()
      .selectFrom('uploads')
      .select('id')
      .where('queue_key', 'is not', null)
      .execute();
    assert.ok(queued.length >= 3, `the file's tests left uploads in the queue (${queued.length})`);
    assert.deepEqual(await queueKeyMismatches(app.composed.db), []);
  });
});
