/**
 * A large blocklist import leaves the service to its other requests (issue 44, item 5; both databases): the entries
 * are written in short transactions with the event loop's turn between them, so while 5 000 PDQ entries (or 10 000
 * SHA-256 ones) go in, /healthz answers and the import's durable `blocklist_hold` job is already listed with part of
 * the entries (GET /api/admin/jobs), all before the import's own 200. Before, one transaction held the event loop for
 * the whole import (26.7 s for /healthz with 5 000 PDQ entries) and the job appeared only with every entry in it.
 * Killed mid-import (SIGKILL), the service keeps what it committed: after the restart the job is listed with those
 * entries, the hold job finishes it, and sending the import again adds exactly the rest.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { lcgRandom, randomPdq } from '../support/hashes.ts';
import { eventually, type JobBody } from '../support/jobs.ts';
import { spawnServer, type ServerProcess } from '../support/process.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';
import type { Client } from '../support/http.ts';
import { setAdmin } from '../../src/domain/auth/admin-roles.ts';
import { openDatabase } from '../../src/store/database.ts';
import { UserRepository } from '../../src/store/repositories/user.repository.ts';

type Entry = { pdq?: string; sha256?: string; reason: string };

const r = lcgRandom(44_5);
const pdqEntries = (n: number): Entry[] => Array.from({ length: n }, () => ({ pdq: randomPdq(r), reason: 'import' }));
// 64 hex digits, as a SHA-256 is.
const shaEntries = (n: number): Entry[] =>
  Array.from({ length: n }, () => ({ sha256: randomPdq(r), reason: 'import' }));

/** The `blocklist_hold` jobs listed now. */
async function holdJobs(api: Client, token: string): Promise<JobBody[]> {
  const res = await api.get('/api/admin/jobs?limit=100', { token });
  assert.equal(res.status, 200, res.text);
  return (res.body.jobs as JobBody[]).filter((j) => j.kind === 'blocklist_hold');
}

/**
 * Sends the import and, until its answer comes, asks /healthz and the jobs list one after the other. Returns what
 * was seen in the order it came: a /healthz answer, the import's job with part of its entries, the import's answer.
 */
async function importObserved(api: Client, token: string, entries: Entry[]) {
  const before = new Set((await holdJobs(api, token)).map((j) => j.id));
  const events: Array<{ kind: 'healthz' | 'partial job' | 'import'; total?: number }> = [];
  let answered = false;
  const importing = api.post('/api/admin/blocklist', { entries }, { token }).then((res) => {
    answered = true;
    events.push({ kind: 'import' });
    return res;
  });
  while (!answered) {
    const health = await api.get('/healthz');
    assert.equal(health.status, 200, health.text);
    if (!answered) events.push({ kind: 'healthz' });
    const partial = (await holdJobs(api, token)).find(
      (j) => !before.has(j.id) && j.progress.total > 0 && j.progress.total < entries.length,
    );
    if (partial && !answered) events.push({ kind: 'partial job', total: partial.progress.total });
  }
  return { res: await importing, events };
}

describe('a large blocklist import', () => {
  let app: TestApp;
  let admin: TestUser;

  before(async () => {
    app = await startApp();
    admin = await registerAdmin(app, `imp_${Math.random().toString(36).slice(2, 8)}`);
  });
  after(() => app.close());

  for (const [label, make, n] of [
    ['5 000 PDQ entries', pdqEntries, 5_000],
    ['10 000 SHA-256 entries', shaEntries, 10_000],
  ] as const) {
    test(`${label}: /healthz answers and the job is listed with part of them before the import answers`, async () => {
      const entries = make(n);
      const { res, events } = await importObserved(app.api, admin.token, entries);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.added, n);
      assert.equal(res.body.skipped, 0);
      assert.ok(res.body.job?.id, 'the answer names the hold job');
      const firstPartial = events.findIndex((e) => e.kind === 'partial job');
      assert.ok(
        firstPartial >= 0,
        `the import's job was listed with part of its entries while it ran: ${JSON.stringify(events.slice(-5))}`,
      );
      assert.ok(
        events.slice(firstPartial).some((e) => e.kind === 'healthz'),
        '/healthz answered while the import was writing (after its job appeared, before its answer)',
      );
      assert.equal(events.at(-1)!.kind, 'import');
      // The job is the one the answer names, with every entry; the hold job runs them all.
      await eventually(
        async () => {
          const job = (await holdJobs(app.api, admin.token)).find((j) => j.id === res.body.job.id);
          assert.ok(job, 'the job of the answer is listed');
          assert.equal(job.progress.total, n);
          return job.status === 'done' && job.progress.done === n;
        },
        `the hold job ran the ${n} entries`,
        120_000,
      );
    });
  }
});

test(
  'killed mid-import: the committed entries and their job survive the restart, the job finishes, and the ' +
    'import sent again adds exactly the rest',
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'pixvote-import-crash-'));
    const database = onPostgres ? await createTestDatabase() : null;
    const databaseUrl = database?.url ?? null;
    const env = {
      DATA_DIR: dataDir,
      WORKERS: '1',
      HUMAN_POLICY: 'off',
      RATE_LIMIT_AUTH: '1000/15m',
      RATE_LIMIT_GENERAL: '100000/15m',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    const withDb = async <T>(fn: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>) => {
      const db = await openDatabase({ databaseUrl, sqlitePath: join(dataDir, 'app.db') });
      try {
        return await fn(db);
      } finally {
        await db.close();
      }
    };
    let server: ServerProcess | null = null;
    try {
      let s = (server = await spawnServer(env));
      const admin = await registerUser(s.api);
      await withDb((db) => setAdmin(new UserRepository(db), admin.username, true));
      const entries = pdqEntries(4_000);
      const importing = s.api.post('/api/admin/blocklist', { entries }, { token: admin.token }).catch(() => null);
      let partial: JobBody | undefined;
      while (!partial) {
        partial = (await holdJobs(s.api, admin.token)).find((j) => j.progress.total > 0);
        assert.ok(!partial || partial.progress.total < entries.length, 'the process is killed mid-import');
      }
      s.kill('SIGKILL');
      await s.exited;
      assert.equal(await importing, null, 'the import was cut off with its connection');

      s = server = await spawnServer(env);
      const [job] = await holdJobs(s.api, admin.token);
      assert.equal(job?.id, partial.id, 'the job is listed after the restart');
      const stored = await withDb(async (db) => {
        const row = await db
          .db()
          .selectFrom('blocklist')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        return Number(row.n);
      });
      assert.ok(stored >= partial.progress.total && stored < entries.length, `${stored} entries committed`);
      assert.equal(job.progress.total, stored, 'the job counts every committed entry');
      await eventually(
        async () => {
          const now = (await holdJobs(s.api, admin.token)).find((j) => j.id === partial.id)!;
          return now.status === 'done' && now.progress.done === stored;
        },
        'the hold job finished the committed entries after the restart',
        60_000,
      );

      const again = await s.api.post('/api/admin/blocklist', { entries }, { token: admin.token });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.added, entries.length - stored);
      assert.equal(again.body.skipped, stored);
    } finally {
      server?.kill('SIGKILL');
      await server?.exited;
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);
