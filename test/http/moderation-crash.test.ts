/**
 * The fault tests extended to moderation (issue 16): a gateway killed with SIGKILL while moderators remove uploads
 * (some sharing their stored files with another user's upload of the same bytes, some not, some twins removed
 * both at once), while an account is banned with its uploads removed, and while uploads keep coming. After the
 * restart (and its media sweep) rows, files, the journal and the modlog agree.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { access, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { spawnServer, type ServerProcess } from '../support/process.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { startApp } from '../support/app.ts';
import { diskStateOf, uploadFields, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';
import { banRemovalJob, type JobBody } from '../support/jobs.ts';
import type { Client } from '../support/http.ts';
import { setAdmin } from '../../src/domain/auth/admin-roles.ts';
import { openDatabase } from '../../src/store/database.ts';
import { UserRepository } from '../../src/store/repositories/user.repository.ts';
import { ModerationRepository } from '../../src/store/moderation/moderation.repository.ts';
import { UploadRepository } from '../../src/store/repositories/upload.repository.ts';
import { similarityIndexFor } from '../../src/store/similarity/similarity-index.ts';

const VARIANTS = ['thumb', 'medium', 'full'];

/**
 * Waits until no moderation job is queued or running (a crashed process's lease expires first). No budget: on a busy
 * machine the jobs end later, not never (one that never ends meets the runner's per-file timeout).
 */
async function jobsSettled(api: Client, token: string): Promise<void> {
  for (;;) {
    const r = await api.get('/api/admin/jobs?limit=100', { token });
    assert.equal(r.status, 200, r.text);
    const open = (r.body.jobs as JobBody[]).filter((j) => j.status === 'queued' || j.status === 'running');
    if (!open.length) return;
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** What the test knows the server answered before it died. */
interface Known {
  /** Uploads answered 201. */
  accepted: Set<string>;
  /** Removals answered 200. */
  removed: Set<string>;
  /** Every upload a moderator (or a ban) was asked to remove, answered or not. */
  targeted: Set<string>;
}

async function withDb<T>(
  dataDir: string,
  databaseUrl: string | null,
  fn: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>,
) {
  const db = await openDatabase({ databaseUrl, sqlitePath: join(dataDir, 'app.db') });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/**
 * Rows, files, journal and modlog agree: a row not removed has all its variant files; no file remains whose key
 * no row references; a removed row has no stored-files key and exactly one `remove` line; no `remove` line names an
 * upload that is not removed; nothing is staged or journalled; what answered before the crash stands.
 */
async function consistency(dataDir: string, databaseUrl: string | null, known: Known): Promise<void> {
  await withDb(dataDir, databaseUrl, async (database) => {
    const db = database.db();
    const rows = await db.selectFrom('uploads').select(['id', 'media_key', 'moderation', 'upload_type']).execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    const removeLines = new Map<string, number>();
    for (const l of await db
      .selectFrom('modlog')
      .select('target_id')
      .where('action', '=', 'remove')
      .where('target_type', '=', 'upload')
      .execute())
      removeLines.set(l.target_id, (removeLines.get(l.target_id) ?? 0) + 1);

    for (const id of known.accepted) assert.ok(byId.has(id), `upload ${id} answered 201 and is still there`);
    for (const id of known.removed)
      assert.equal(byId.get(id)?.moderation, 'removed', `removal of ${id} answered 200 and is still in force`);
    const keys = new Set<string>();
    for (const r of rows) {
      if (r.moderation === 'removed') {
        assert.equal(r.media_key, null, `removed upload ${r.id} keeps no stored-files key`);
        assert.equal(removeLines.get(r.id), 1, `removed upload ${r.id} has exactly one remove line in the modlog`);
        assert.ok(known.targeted.has(r.id), `upload ${r.id} was removed without anyone asking`);
        continue;
      }
      assert.equal(removeLines.get(r.id), undefined, `upload ${r.id} is ${r.moderation} yet the modlog says removed`);
      if (r.upload_type !== 'image') continue;
      assert.ok(r.media_key, `image upload ${r.id} (${r.moderation}) has its stored-files key`);
      keys.add(r.media_key);
      for (const v of VARIANTS)
        await access(join(dataDir, 'media', r.media_key.slice(0, 2), `${r.media_key}.${v}.webp`)).catch(() =>
          assert.fail(`upload ${r.id} (media ${r.media_key}) lacks its ${v} file`),
        );
    }
    const disk = await diskStateOf(dataDir);
    const orphans = disk.media.filter((f) => !keys.has(basename(f).split('.')[0]!));
    assert.deepEqual(orphans, [], 'no file remains whose key no row references');
    assert.deepEqual(disk.staging, [], 'the start-up sweep left nothing staged');
    assert.deepEqual(disk.tmp, [], 'the start-up sweep left no temp file');
    assert.deepEqual(await db.selectFrom('media_garbage').select('media_key').execute(), [], 'no release is pending');
  });
}

test(
  'SIGKILL while moderators remove uploads (shared files or not), a ban removes an account’s uploads and uploads ' +
    'continue: after restart rows, files, journal and modlog agree',
  async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-mod-crash-'));
    const database = onPostgres ? await createTestDatabase() : null;
    const databaseUrl = database?.url ?? null;
    const env = {
      DATA_DIR: dataDir,
      WORKERS: '2',
      WORKER_QUEUE: '50',
      HUMAN_POLICY: 'off',
      // Small random images: each must be stored, never answered as a near duplicate of another.
      NEAR_DUPLICATE_DISTANCE: '-1',
      RATE_LIMIT_AUTH: '1000/15m',
      RATE_LIMIT_UPLOAD: '10000/1h',
      RATE_LIMIT_GENERAL: '100000/15m',
      // The ban's removal job of a killed process passes to its successor once its lease ends: 1 s, not 10 s.
      MODERATION_JOB_LEASE_MS: '1000',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    const known: Known = { accepted: new Set(), removed: new Set(), targeted: new Set() };
    let server: ServerProcess | null = null;
    try {
      let s = (server = await spawnServer(env));
      const [alice, bob, dave, admin] = [
        await registerUser(s.api),
        await registerUser(s.api),
        await registerUser(s.api),
        await registerUser(s.api),
      ];
      await withDb(dataDir, databaseUrl, (db) => setAdmin(new UserRepository(db), admin.username, true));
      let seed = 50_000;
      const image = () => photoJpeg({ width: 96, height: 72, seed: seed++, metadata: false });
      const upload = async (user: TestUser, bytes?: Buffer) => {
        const r = await uploadImage(s.api, user.token, bytes ?? (await image()));
        assert.equal(r.status, 201, r.text);
        known.accepted.add(r.body.id);
        return r.body.id as string;
      };
      const mediaKeys = (ids: string[]) =>
        withDb(dataDir, databaseUrl, async (db) => {
          const rows = await db.db().selectFrom('uploads').select(['id', 'media_key']).where('id', 'in', ids).execute();
          return new Map(rows.map((r) => [r.id, r.media_key]));
        });
      const survivors: string[] = [];

      // Three rounds killed mid-way, then one that runs to its end (removals racing re-uploads of their bytes).
      for (let round = 0; round < 4; round++) {
        const crash = round < 3;
        // Twins: Alice's private upload and Bob's public upload of the same bytes share their stored files.
        const targets: string[] = [];
        const pairs: Array<[string, string]> = [];
        // The bytes of what is being removed: a third user uploads them again meanwhile.
        const targetBytes: Buffer[] = [];
        for (let i = 0; i < 9; i++) {
          const bytes = await image();
          targetBytes.push(bytes);
          const hidden = await uploadImage(s.api, alice.token, bytes, { is_private: 'true' });
          const twin = await uploadImage(s.api, bob.token, bytes);
          assert.equal(hidden.status, 201, hidden.text);
          assert.equal(twin.status, 201, twin.text);
          known.accepted.add(hidden.body.id).add(twin.body.id);
          pairs.push([hidden.body.id, twin.body.id]);
          // One side removed (the other keeps the files), or both at once (the last one releases them).
          if (i % 3 === 0) targets.push(hidden.body.id);
          else if (i % 3 === 1) targets.push(twin.body.id);
          else targets.push(hidden.body.id, twin.body.id);
          if (i % 3 !== 2) survivors.push(i % 3 === 0 ? twin.body.id : hidden.body.id);
        }
        const keys = await mediaKeys(pairs.flat());
        for (const [hidden, twin] of pairs)
          assert.equal(keys.get(twin), keys.get(hidden), 'the twins share their stored files');
        // Uploads with files of their own.
        for (let i = 0; i < 8; i++) {
          const bytes = await image();
          targetBytes.push(bytes);
          targets.push(await upload(alice, bytes));
        }
        // An account banned with its uploads removed.
        const carol = await registerUser(s.api);
        const carols = [await upload(carol), await upload(carol), await upload(carol), await upload(carol)];
        for (const id of [...targets, ...carols]) known.targeted.add(id);
        // Interleave the twins' removals with the others', so that both sides of a pair are removed at once.
        targets.sort(() => Math.random() - 0.5);

        let running = true;
        let next = 0;
        const answered = new Set<string>();
        const remover = async () => {
          while (running && next < targets.length) {
            const id = targets[next++]!;
            const r = await s.api
              .post(
                `/api/admin/uploads/${id}/moderation`,
                { action: 'remove', reason: `crash round ${round}` },
                { token: admin.token },
              )
              .catch(() => null);
            if (!r) return; // the process died
            assert.equal(r.status, 200, r.text);
            known.removed.add(id);
            answered.add(id);
            // Kill it while removals are flowing: the moment a third have answered, others in flight.
            if (crash && answered.size === Math.ceil(targets.length / 3)) server!.kill('SIGKILL');
          }
        };
        let uploads = 0;
        const uploader = async () => {
          while (running) {
            // Fresh bytes, or those of an upload being removed (a twin of a private one, a duplicate of a
            // public one, or a new upload once it is gone).
            const fresh = uploads++ % 2 === 0;
            const bytes = fresh ? await image() : targetBytes[uploads % targetBytes.length]!;
            const r = await uploadImage(s.api, dave.token, bytes).catch(() => null);
            if (!r) return;
            assert.ok(r.status === 201 || (!fresh && r.status === 200), `${r.status} ${r.text}`);
            if (r.status === 201) known.accepted.add(r.body.id);
          }
        };
        const ban = s.api
          .post(
            `/api/admin/users/${carol.id}/ban`,
            { reason: `crash round ${round}`, until: null, remove_uploads: true },
            { token: admin.token },
          )
          .then(
            (r) => assert.equal(r.status, 200, r.text),
            () => {},
          );
        // The ban's removal is a durable job that the answer does not wait for: once no job is left unfinished
        // (after a restart too: the job is claimed again), Carol's uploads are all removed.
        const banRemoved = async () => {
          await jobsSettled(s.api, admin.token);
          const job = (await s.api.get('/api/admin/jobs?limit=100', { token: admin.token })).body.jobs.find(
            (j: JobBody) => j.kind === 'ban_removal' && j.target.id === carol.id,
          );
          if (job) for (const id of carols) known.removed.add(id);
        };
        const lanes = [remover(), remover(), remover(), remover(), uploader(), uploader()];
        const removers = Promise.all(lanes.slice(0, 4));
        if (!crash) {
          await Promise.all([removers, ban]);
          running = false;
          await Promise.all(lanes);
          t.diagnostic(`round ${round}: ${uploads} uploads ran alongside the removals`);
          await banRemoved();
          await consistency(dataDir, databaseUrl, known);
          continue;
        }
        await Promise.race([server.exited, removers]);
        await server.exited;
        running = false;
        await Promise.all([...lanes, ban]);
        t.diagnostic(`round ${round}: ${answered.size} of ${targets.length} removals answered before the kill`);
        assert.ok(answered.size < targets.length, 'some removals were still to come when the process died');

        s = server = await spawnServer(env);
        const recovered = s.logs.find((l) => l.msg === 'media recovered');
        t.diagnostic(`round ${round}: restart recovered ${JSON.stringify(recovered ?? {})}`);
        await banRemoved();
        await consistency(dataDir, databaseUrl, known);
      }

      // Through HTTP: removed uploads answer 410; a twin whose partner was removed still serves every size.
      const removedRows = await withDb(dataDir, databaseUrl, (db) =>
        db.db().selectFrom('uploads').select('id').where('moderation', '=', 'removed').execute(),
      );
      assert.ok(removedRows.length > 0);
      for (const { id } of removedRows) {
        const r = await s.api.get(`/api/upload/${id}`);
        assert.equal(r.status, 410, r.text);
        assert.equal((await s.api.get(`/api/image/${id}?size=thumb`)).status, 410);
      }
      const removedIds = new Set(removedRows.map((r) => r.id));
      for (const id of survivors.filter((x) => !removedIds.has(x)))
        for (const size of VARIANTS)
          assert.equal((await s.api.get(`/api/image/${id}?size=${size}`)).status, 200, `${size} of twin ${id}`);
      s.kill('SIGTERM');
      assert.equal((await s.exited).code, 0);
    } finally {
      if (server && server.proc.exitCode === null) server.kill('SIGKILL');
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);

test(
  "a crash between a removal's commit and the removal of its files: the start-up sweep removes the journalled " +
    'files, and keeps those a twin upload still references',
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-mod-gap-'));
    const database = onPostgres ? await createTestDatabase() : null;
    const shared = { sharedDataDir: dataDir, ...(database ? { databaseUrl: database.url } : {}) };
    const env = { NEAR_DUPLICATE_DISTANCE: '-1' };
    try {
      const first = await startApp(env, shared);
      const [alice, bob] = [await registerUser(first.api), await registerUser(first.api)];
      const admin = await registerAdmin(first);
      const single = await uploadImage(first.api, alice.token, await photoJpeg({ width: 96, height: 72, seed: 61 }));
      const bytes = await photoJpeg({ width: 96, height: 72, seed: 62 });
      const hidden = await uploadImage(first.api, alice.token, bytes, { is_private: 'true' });
      const twin = await uploadImage(first.api, bob.token, bytes);
      for (const r of [single, hidden, twin]) assert.equal(r.status, 201, r.text);
      const db = first.composed.db;
      const keyOf = async (id: string) =>
        (await db.db().selectFrom('uploads').select('media_key').where('id', '=', id).executeTakeFirstOrThrow())
          .media_key!;
      const [singleKey, twinKey] = [await keyOf(single.body.id), await keyOf(twin.body.id)];
      assert.equal(await keyOf(hidden.body.id), twinKey, 'the twins share their stored files');
      const files = (key: string) => VARIANTS.map((v) => join(dataDir, 'media', key.slice(0, 2), `${key}.${v}.webp`));

      // The state such a crash leaves: the removals committed (row, journal, modlog), no file unlinked yet.
      const store = new ModerationRepository(
        db,
        new UploadRepository(db, similarityIndexFor(db.dialect, first.config.nearDuplicateIndex)),
        similarityIndexFor(db.dialect, first.config.nearDuplicateIndex),
      );
      const moderator = { id: admin.id, username: admin.username };
      for (const id of [single.body.id, hidden.body.id]) {
        const outcome = await store.act(id, 'remove', { moderator, reason: 'gap', block: 'none', at: new Date() });
        assert.ok(outcome);
      }
      const journal = await db.db().selectFrom('media_garbage').select('media_key').execute();
      assert.deepEqual(
        journal.map((g) => g.media_key),
        [singleKey],
        'only the files no other row references are journalled',
      );
      for (const f of [...files(singleKey), ...files(twinKey)]) await stat(f);
      await first.close();

      const second = await startApp(env, shared);
      try {
        for (const f of files(singleKey))
          await assert.rejects(stat(f), { code: 'ENOENT' }, 'the journalled files are removed at start-up');
        for (const f of files(twinKey)) await stat(f);
        assert.deepEqual(await second.composed.db.db().selectFrom('media_garbage').select('media_key').execute(), []);
        for (const id of [single.body.id, hidden.body.id]) {
          const r = await second.api.get(`/api/upload/${id}`);
          assert.equal(r.status, 410, r.text);
        }
        for (const size of VARIANTS)
          assert.equal((await second.api.get(`/api/image/${twin.body.id}?size=${size}`)).status, 200);
        await consistency(dataDir, database?.url ?? null, {
          accepted: new Set([single.body.id, hidden.body.id, twin.body.id]),
          removed: new Set([single.body.id, hidden.body.id]),
          targeted: new Set([single.body.id, hidden.body.id]),
        });
      } finally {
        await second.close();
      }
    } finally {
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);

test(
  "SIGKILL in the middle of a ban's removal of many uploads: the ban answered first, the job resumes after the " +
    'restart, every upload is removed with exactly one modlog line',
  async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-ban-crash-'));
    const database = onPostgres ? await createTestDatabase() : null;
    const databaseUrl = database?.url ?? null;
    const env = {
      DATA_DIR: dataDir,
      HUMAN_POLICY: 'off',
      NEAR_DUPLICATE_DISTANCE: '-1',
      RATE_LIMIT_AUTH: '1000/15m',
      RATE_LIMIT_UPLOAD: '10000/1h',
      RATE_LIMIT_GENERAL: '100000/15m',
      // 13 steps of 20 removals, 400 ms apart: the kill below lands between two of them whatever the machine's
      // speed (without the pause, SQLite ran all 246 removals between two polls of a loaded CI machine).
      MODERATION_JOB_PAUSE_MS: '400',
      // The restarted process takes the job over once the dead one's lease ends: 1 s, not 10 s.
      MODERATION_JOB_LEASE_MS: '1000',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    let server: ServerProcess | null = null;
    try {
      let s = (server = await spawnServer(env));
      const [victim, admin] = [await registerUser(s.api), await registerUser(s.api)];
      await withDb(dataDir, databaseUrl, (db) => setAdmin(new UserRepository(db), admin.username, true));
      // Many uploads (links are cheap to make), and some images whose stored files must go too.
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await uploadImage(s.api, victim.token, await photoJpeg({ width: 96, height: 72, seed: 70_000 + i }));
        assert.equal(r.status, 201, r.text);
        ids.push(r.body.id);
      }
      const links = await Promise.all(
        Array.from({ length: 4 }, async (_, lane) => {
          const mine: string[] = [];
          for (let i = 0; i < 60; i++) {
            const r = await uploadFields(s.api, victim.token, {
              upload_type: 'link',
              external_url: `https://example.com/ban-crash/${lane}/${i}`,
            });
            assert.equal(r.status, 201, r.text);
            mine.push(r.body.id);
          }
          return mine;
        }),
      );
      ids.push(...links.flat());
      const keys = await withDb(dataDir, databaseUrl, async (db) =>
        (await db.db().selectFrom('uploads').select('media_key').where('id', 'in', ids).execute()).flatMap((r) =>
          r.media_key ? [r.media_key] : [],
        ),
      );
      assert.equal(keys.length, 6);

      const ban = await s.api.post(
        `/api/admin/users/${victim.id}/ban`,
        { reason: 'crash', until: null, remove_uploads: true },
        { token: admin.token },
      );
      assert.equal(ban.status, 200, ban.text);
      const first = await banRemovalJob(s.api, admin.token, victim.id);
      assert.ok(first.progress.done < ids.length, `the ban answered before its removal finished: ${first.status}`);
      assert.equal(first.progress.total, ids.length);
      // Killed once a step or more has committed, before the last.
      for (;;) {
        const job = await banRemovalJob(s.api, admin.token, victim.id);
        assert.notEqual(job.status, 'done', 'the kill came before the job ended');
        if (job.progress.done > 0) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      s.kill('SIGKILL');
      await s.exited;
      const removedAtKill = await withDb(dataDir, databaseUrl, async (db) =>
        Number(
          (
            await db
              .db()
              .selectFrom('uploads')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('user_id', '=', victim.id)
              .where('moderation', '=', 'removed')
              .executeTakeFirstOrThrow()
          ).n,
        ),
      );
      t.diagnostic(`${removedAtKill} of ${ids.length} removed when the process died`);
      assert.ok(removedAtKill > 0 && removedAtKill < ids.length, 'killed in the middle of the removal');

      // The restarted process claims the job once the dead one's lease has expired, and finishes it.
      s = server = await spawnServer({ ...env, MODERATION_JOB_PAUSE_MS: '0' });
      await jobsSettled(s.api, admin.token);
      const job = await banRemovalJob(s.api, admin.token, victim.id);
      assert.equal(job.status, 'done');
      assert.deepEqual(job.progress, { done: ids.length, total: ids.length });
      await withDb(dataDir, databaseUrl, async (database) => {
        const db = database.db();
        const rows = await db.selectFrom('uploads').select(['id', 'moderation']).where('id', 'in', ids).execute();
        assert.equal(rows.length, ids.length);
        for (const r of rows) assert.equal(r.moderation, 'removed', `upload ${r.id} is removed`);
        const lines = await db
          .selectFrom('modlog')
          .select('target_id')
          .where('action', '=', 'remove')
          .where('target_id', 'in', ids)
          .execute();
        const perUpload = new Map<string, number>();
        for (const l of lines) perUpload.set(l.target_id, (perUpload.get(l.target_id) ?? 0) + 1);
        for (const id of ids) assert.equal(perUpload.get(id), 1, `exactly one remove line for ${id}`);
      });
      const disk = await diskStateOf(dataDir);
      for (const key of keys)
        assert.ok(!disk.media.some((f) => basename(f).startsWith(key)), `the files of ${key} are gone`);
      for (const id of ids.slice(0, 8)) assert.equal((await s.api.get(`/api/upload/${id}`)).status, 410);
      s.kill('SIGTERM');
      assert.equal((await s.exited).code, 0);
    } finally {
      if (server && server.proc.exitCode === null) server.kill('SIGKILL');
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);
