/** The durable moderation jobs as an admin sees them (`GET /api/admin/jobs`), for tests that wait for one. */
import assert from 'node:assert/strict';
import type { Client } from './http.ts';
import { pollUntil } from './budget.ts';
import type { JobView } from '../../src/domain/moderation/moderation.service.ts';

/** A job as `GET /api/admin/jobs` answers it: the service's view, which the OpenAPI document checks. */
export type JobBody = JobView;

/** The newest `ban_removal` job of this user, as listed now (fails when there is none). */
export async function banRemovalJob(api: Client, token: string, userId: string): Promise<JobBody> {
  const r = await api.get('/api/admin/jobs?limit=100', { token });
  assert.equal(r.status, 200, r.text);
  const job = (r.body.jobs as JobBody[]).find((j) => j.kind === 'ban_removal' && j.target.id === userId);
  assert.ok(job, `a ban_removal job for user ${userId} is listed`);
  return job;
}

/**
 * Polls the user's `ban_removal` job until it is done (fails when it fails). No budget: a durable job ends, later
 * on a busy machine (one that never does meets the runner's per-file timeout).
 */
export async function banRemovalDone(api: Client, token: string, userId: string) {
  for (;;) {
    const job = await banRemovalJob(api, token, userId);
    if (job.status === 'done') return job;
    assert.notEqual(job.status, 'failed', JSON.stringify(job));
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls `check` until it holds (the background job runs on its own); fails after `ms`, stretched by the load. */
export async function eventually(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  await pollUntil(check, `until ${what}`, ms);
}

/** The `blocklist_hold` jobs listed now (the newest 100 jobs of any kind, filtered). */
export async function blocklistHoldJobs(api: Client, token: string): Promise<JobBody[]> {
  const r = await api.get('/api/admin/jobs?limit=100', { token });
  assert.equal(r.status, 200, r.text);
  return (r.body.jobs as JobBody[]).filter((j) => j.kind === 'blocklist_hold');
}
