/**
 * A large blocklist import leaves the service to its other requests (issue 44, item 5; both databases): the entries
 * are written in short transactions with the event loop's turn between them, so while 5 000 PDQ entries (or 10 000
 * SHA-256 ones) go in, /healthz answers and the import's durable `blocklist_hold` job is already listed with part of
 * the entries (GET /api/admin/jobs), all before the import's own 200. Before, one transaction held the event loop for
 * the whole import (26.7 s for /healthz with 5 000 PDQ entries) and the job appeared only with every entry in it.
 * (blocklist-import-crash.test.ts: the same import killed mid-way.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, type TestUser } from '../support/users.ts';
import { lcgRandom, randomPdq } from '../support/hashes.ts';
import { blocklistHoldJobs, eventually } from '../support/jobs.ts';
import type { Client } from '../support/http.ts';

type Entry = { pdq?: string; sha256?: string; reason: string };

const r = lcgRandom(44_5);
const pdqEntries = (n: number): Entry[] => Array.from({ length: n }, () => ({ pdq: randomPdq(r), reason: 'import' }));
// 64 hex digits, as a SHA-256 is.
const shaEntries = (n: number): Entry[] =>
  Array.from({ length: n }, () => ({ sha256: randomPdq(r), reason: 'import' }));

/**
 * Sends the import and, until its answer comes, asks /healthz and the jobs list one after the other. Returns what
 * was seen in the order it came: a /healthz answer, the import's job with part of its entries, the import's answer.
 */
async function importObserved(api: Client, token: string, entries: Entry[]) {
  const before = new Set((await blocklistHoldJobs(api, token)).map((j) => j.id));
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
    const partial = (await blocklistHoldJobs(api, token)).find(
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
          const job = (await blocklistHoldJobs(app.api, admin.token)).find((j) => j.id === res.body.job.id);
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
