/**
 * A blocklist import killed mid-way (SIGKILL; issue 44, item 5; both databases): the service keeps what it committed
 * (each step is its own transaction), so after the restart the import's `blocklist_hold` job is listed with exactly
 * the committed entries, the hold job finishes it, and sending the import again adds exactly the rest.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerUser } from '../support/users.ts';
import { lcgRandom, randomPdq } from '../support/hashes.ts';
import { blocklistHoldJobs, eventually, type JobBody } from '../support/jobs.ts';
import { spawnServer, type ServerProcess } from '../support/process.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';
import { setAdmin } from '../../src/domain/auth/admin-roles.ts';
import { openDatabase } from '../../src/store/database.ts';
import { UserRepository } from '../../src/store/repositories/user.repository.ts';

const r = lcgRandom(44_6);
const pdqEntries = (n: number) => Array.from({ length: n }, () => ({ pdq: randomPdq(r), reason: 'import' }));

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
        partial = (await blocklistHoldJobs(s.api, admin.token)).find((j) => j.progress.total > 0);
        assert.ok(!partial || partial.progress.total < entries.length, 'the process is killed mid-import');
      }
      s.kill('SIGKILL');
      await s.exited;
      assert.equal(await importing, null, 'the import was cut off with its connection');

      s = server = await spawnServer(env);
      const [job] = await blocklistHoldJobs(s.api, admin.token);
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
          const now = (await blocklistHoldJobs(s.api, admin.token)).find((j) => j.id === partial.id)!;
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
