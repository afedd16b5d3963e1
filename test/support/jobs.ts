/** The durable moderation jobs as an admin sees them (`GET /api/admin/jobs`), for tests that wait for one. */
import assert from 'node:assert/strict';
import type { Client } from './http.ts';

export interface JobBody {
  id: string;
  kind: 'ban_removal' | 'blocklist_hold';
  status: 'queued' | 'running' | 'done' | 'failed';
  progress: { done: number; total: number };
  target: { type: 'user' | 'blocklist'; id: string | null };
  reason: string;
  moderator: { id: string; username: string } | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** The newest `ban_removal` job of this user, as listed now (fails when there is none). */
export async function banRemovalJob(api: Client, token: string, userId: string): Promise<JobBody> {
  const r = await api.get('/api/admin/jobs?limit=100', { token });
  assert.equal(r.status, 200, r.text);
  const job = (r.body.jobs as JobBody[]).find((j) => j.kind === 'ban_removal' && j.target.id === userId);
  assert.ok(job, `a ban_removal job for user ${userId} is listed`);
  return job;
}

/** Polls the user's `ban_removal` job until it is done (fails when it fails, or after `timeoutMs`). */
export async function banRemovalDone(api: Client, token: string, userId: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await banRemovalJob(api, token, userId);
    if (job.status === 'done') return job;
    assert.notEqual(job.status, 'failed', JSON.stringify(job));
    assert.ok(Date.now() < deadline, `the ban's removal job ended within ${timeoutMs} ms: ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
