import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client, Reply } from './http.ts';
import type { TestApp } from './app.ts';

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
