import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Client, Reply } from './http.ts';
import type { TestApp } from './app.ts';
import type { Database } from '../../src/store/database.ts';

/** POST /api/v1/upload as multipart with a file. */
export function uploadImage(
  api: Client,
  token: string,
  bytes: Uint8Array,
  fields: Record<string, string> = {},
  name = 'photo.jpg',
): Promise<Reply> {
  const form = new FormData();
  form.append('upload_type', fields.upload_type ?? 'image');
  for (const [k, v] of Object.entries(fields)) if (k !== 'upload_type') form.append(k, v);
  form.append('file', new Blob([bytes]), name);
  return api.post('/api/v1/upload', undefined, { token, raw: form });
}

/** POST /api/v1/upload as multipart with form fields only (links, image URLs). */
export function uploadFields(api: Client, token: string, fields: Record<string, string>): Promise<Reply> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return api.post('/api/v1/upload', undefined, { token, raw: form });
}

/** A link upload (cheap to make, never a duplicate) by this user: asserts the 201 and returns its id. */
export async function uploadLink(
  api: Client,
  user: { token: string },
  fields: Record<string, string> = {},
): Promise<string> {
  const r = await uploadFields(api, user.token, {
    upload_type: 'link',
    external_url: `https://example.com/${Math.random()}`,
    ...fields,
  });
  assert.equal(r.status, 201, r.text);
  return r.body.id as string;
}

/** POST /api/upload/{id}/report as this user. */
export const reportUpload = (api: Client, id: string, user: { token: string }, reason = 'spam'): Promise<Reply> =>
  api.post(`/api/upload/${id}/report`, { reason }, { token: user.token });

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out;
}

/** What a data directory holds: stored variants, staged files, multipart temp files (instance heartbeats aside). */
export async function diskStateOf(dataDir: string): Promise<{ media: string[]; staging: string[]; tmp: string[] }> {
  const real = (files: string[]) => files.filter((f) => !f.endsWith('/.alive'));
  return {
    media: await filesUnder(join(dataDir, 'media')),
    staging: real(await filesUnder(join(dataDir, 'staging'))),
    tmp: real(await filesUnder(join(dataDir, 'tmp'))),
  };
}

export const diskState = (app: TestApp) => diskStateOf(app.config.dataDir);

export async function countUploads(app: TestApp): Promise<number> {
  const r = await app.composed.db
    .db()
    .selectFrom('uploads')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Every upload whose stored open-queue columns (m020: `open_reports`, `queue_key`) differ from what its reports and
 * state make them, recomputed here from the source rows: `[]` when the queue's index is exact.
 */
export async function queueKeyMismatches(database: Database): Promise<string[]> {
  const db = database.db();
  const d = database.dialect;
  const open = new Map<string, number>();
  for (const r of await db.selectFrom('reports').select('upload_id').where('status', '=', 'open').execute())
    open.set(r.upload_id, (open.get(r.upload_id) ?? 0) + 1);
  const rows = await db
    .selectFrom('uploads')
    .select(['id', 'moderation', 'person_flag', 'open_reports', 'queue_key'])
    .execute();
  return rows.flatMap((u) => {
    const n = open.get(u.id) ?? 0;
    const flagged = d.readBool(u.person_flag);
    const key =
      u.moderation === 'removed' ? null : u.moderation === 'held' ? -n : flagged || n > 0 ? 1_000_000_000 - n : null;
    const stored = u.queue_key === null ? null : Number(u.queue_key);
    return Number(u.open_reports) === n && stored === key
      ? []
      : [`${u.id} (${u.moderation}, flag ${flagged}, ${n} open): open_reports ${u.open_reports}, queue_key ${stored}`];
  });
}

/** Every upload whose vote counters (upvotes, downvote_count, score) differ from its `votes` rows: `[]` if exact. */
export async function counterMismatches(database: Database): Promise<unknown[]> {
  const { rows } = await sql<{
    id: string;
    upvotes: number;
    downvote_count: number;
    score: number;
    up: number;
    down: number;
  }>`
    select u.id, u.upvotes, u.downvote_count, u.score,
      (select count(*) from votes v where v.upload_id = u.id and v.value = 1) as up,
      (select count(*) from votes v where v.upload_id = u.id and v.value = -1) as down
    from uploads u`.execute(database.db());
  return rows.filter(
    (r) =>
      Number(r.upvotes) !== Number(r.up) ||
      Number(r.downvote_count) !== Number(r.down) ||
      Number(r.score) !== Number(r.up) - Number(r.down),
  );
}
