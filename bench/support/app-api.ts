/** The few API calls benchmarks make around their measurements: users, tokens, image uploads, deletes. */
import jwt from 'jsonwebtoken';
import type { BenchImage } from './images.ts';
import { multipart, type HttpRequest, type LoadClient } from './http-load.ts';
import { mapLimit } from './stats.ts';
import { BENCH_JWT_SECRET } from './server-process.ts';

const JSON_BODY = { 'content-type': 'application/json' };

/** Registers a user through the API (production password hashing) and returns its JWT. */
export async function register(client: LoadClient, username: string): Promise<string> {
  const res = await client.send({
    method: 'POST',
    path: '/api/auth',
    headers: JSON_BODY,
    body: JSON.stringify({
      action: 'register',
      username,
      email: `${username}@example.com`,
      password: 'benchmark-password',
    }),
  });
  if (res.status !== 201) throw new Error(`registering ${username}: HTTP ${res.status} ${res.body}`);
  return res.json<{ token: string }>().token;
}

/** What a login would hand a seeded user: an HS256 JWT signed with the app's JWT_SECRET (appEnv sets it). */
export function mintJwt(userId: string): string {
  const iat = Math.floor(Date.now() / 1000);
  return jwt.sign({ sub: userId, iat, exp: iat + 24 * 3600 }, BENCH_JWT_SECRET, { algorithm: 'HS256' });
}

const TYPES = { jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif' } as const;

/** A ready-to-send multipart upload of `image`. */
export function uploadRequest(image: BenchImage, token: string): HttpRequest {
  const { body, contentType } = multipart(
    { upload_type: 'image', description: 'benchmark upload' },
    {
      name: `bench.${image.kind === 'jpeg' ? 'jpg' : image.kind}`,
      type: TYPES[image.kind],
      bytes: image.bytes,
    },
  );
  return {
    method: 'POST',
    path: '/api/v1/upload',
    headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
    body,
  };
}

/** The id of a created upload, or an error naming what came back instead of 201. */
export function createdId(status: number, body: string | null): string {
  if (status !== 201) throw new Error(`upload answered HTTP ${status}: ${body?.slice(0, 300)}`);
  return (JSON.parse(body!) as { id: string }).id;
}

/** Deletes uploads (freeing their content hashes, so the same images can be uploaded again). */
export async function deleteUploads(client: LoadClient, token: string, ids: readonly string[]): Promise<void> {
  await mapLimit(ids, 4, async (id) => {
    const res = await client.send({
      method: 'DELETE',
      path: `/api/upload/${id}`,
      headers: { authorization: `Bearer ${token}` },
    });
    if (res.status !== 200) throw new Error(`DELETE /api/upload/${id}: HTTP ${res.status} ${res.body}`);
  });
}
