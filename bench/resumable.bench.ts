/**
 * Resumable (tus 1.0) uploads against direct multipart uploads (issue 49): distinct 2 MP JPEGs, one client, the
 * app in its own process as `npm start` runs it, in interleaved rounds of the same images (each round's uploads
 * deleted after the timing, so the next round uploads them as new). `tus ×1`: creation, one PATCH of the whole
 * file, the result read; `creation-with-upload`: the file in the creation request, whose answer carries the result
 * (one request, as the direct upload; what `pixvote upload` and the web form send first); `tus 128 KiB`:
 * PATCHes of 128 KiB with `Upload-Checksum`. Then the bytes a client sends twice when its connection drops halfway
 * through a chunk and it resumes from the server's offset.
 *
 * `--store s3` puts the media, and so the bytes of resumable uploads in progress (an S3 multipart upload each), on
 * the S3 server of scripts/s3-server.sh instead of local disk.
 *
 *   npm run bench:resumable [-- --db sqlite|postgres --store disk|s3 --rounds 5 --images 8]
 */
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { createBenchDatabase, postgresUnavailable, type DbKind } from './support/bench-database.ts';
import { isMain, runAlone } from './support/cli.ts';
import { jpegs, type BenchImage } from './support/images.ts';
import { figure, type Recorder } from './support/report.ts';
import { appEnv, startServer } from './support/server-process.ts';
import { interleave, ratios } from './support/stats.ts';
import { TARGETS } from './support/targets.ts';
import { createTestBucket, s3Unreachable, type TestBucket } from '../test/support/s3.ts';

const TUS = '/api/uploads/resumable';
const V = { 'tus-resumable': '1.0.0' };
/** Below a 2 MP JPEG's 0.4 MiB, so that a file takes several PATCHes. */
const CHUNK = 128 * 1024;

export interface ResumableOptions {
  db: DbKind;
  /** Where the media (and the partial bytes) are: local disk (default) or the S3 test server. */
  store?: 'disk' | 's3';
  rounds: number;
  images: number;
  /** bench:ci: only direct uploads and the file in the creation request, no cut (a guard, not the report). */
  ciOnly?: boolean;
}

async function json(res: Response): Promise<Record<string, unknown>> {
  const text = await res.text();
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

async function direct(url: string, token: string, img: BenchImage): Promise<string> {
  const form = new FormData();
  form.append('upload_type', 'image');
  form.append('file', new Blob([img.bytes], { type: 'image/jpeg' }), `${img.name}.jpg`);
  const res = await fetch(`${url}/api/v1/upload`, { method: 'POST', body: form, headers: { authorization: token } });
  const body = await json(res);
  if (res.status !== 201) throw new Error(`direct upload: ${res.status} ${JSON.stringify(body)}`);
  return body.id as string;
}

async function patch(url: string, token: string, at: string, offset: number, chunk: Uint8Array): Promise<number> {
  const res = await fetch(url + at, {
    method: 'PATCH',
    body: chunk,
    headers: {
      ...V,
      authorization: token,
      'content-type': 'application/offset+octet-stream',
      'upload-offset': String(offset),
      'upload-checksum': `sha256 ${createHash('sha256').update(chunk).digest('base64')}`,
    },
  });
  await res.arrayBuffer();
  if (res.status !== 204) throw new Error(`PATCH: ${res.status}`);
  return Number(res.headers.get('upload-offset'));
}

/** A creation request's headers for `img`. */
const creation = (token: string, img: BenchImage) => ({
  ...V,
  authorization: token,
  'upload-length': String(img.bytes.length),
  'upload-metadata': `filename ${Buffer.from(`${img.name}.jpg`).toString('base64')}`,
});

async function create(url: string, token: string, img: BenchImage): Promise<string> {
  const res = await fetch(url + TUS, { method: 'POST', headers: creation(token, img) });
  await res.arrayBuffer();
  if (res.status !== 201) throw new Error(`tus creation: ${res.status}`);
  return res.headers.get('location')!;
}

/** tus `creation-with-upload`: the file in the creation request's body (tus-js-client's uploadDataDuringCreation). */
async function createWithUpload(url: string, token: string, img: BenchImage): Promise<string> {
  const res = await fetch(url + TUS, {
    method: 'POST',
    headers: { ...creation(token, img), 'content-type': 'application/offset+octet-stream' },
    body: img.bytes,
  });
  const body = await json(res);
  if (res.status !== 201) throw new Error(`tus creation-with-upload: ${res.status}`);
  if (Number(res.headers.get('upload-offset')) !== img.bytes.length)
    throw new Error(`tus creation-with-upload: offset ${res.headers.get('upload-offset')}`);
  // The whole file in the creation: its body carries the use case's answer (no `…/result` request).
  const answer = body.result as { status: number; body: { id: string } } | undefined;
  if (answer?.status !== 201) throw new Error(`tus creation-with-upload: result ${JSON.stringify(answer)}`);
  return answer.body.id;
}

async function result(url: string, token: string, at: string): Promise<string> {
  const res = await fetch(`${url}${at}/result`, { headers: { authorization: token } });
  const body = await json(res);
  if (res.status !== 201) throw new Error(`tus result: ${res.status} ${JSON.stringify(body)}`);
  return body.id as string;
}

async function resumable(url: string, token: string, img: BenchImage, chunk: number): Promise<string> {
  const at = await create(url, token, img);
  let offset = 0;
  while (offset < img.bytes.length)
    offset = await patch(url, token, at, offset, img.bytes.subarray(offset, offset + chunk));
  return result(url, token, at);
}

/** Bytes sent twice: a PATCH of `chunk` cut halfway through at 50 % of the file, then resumed from HEAD. */
async function resentAfterCut(url: string, token: string, img: BenchImage, chunk: number): Promise<number> {
  const at = await create(url, token, img);
  const half = Math.floor(img.bytes.length / 2 / chunk) * chunk;
  let offset = 0;
  let sent = 0;
  while (offset < half) {
    const part = img.bytes.subarray(offset, Math.min(offset + chunk, half));
    offset = await patch(url, token, at, offset, part);
    sent += part.length;
  }
  const cut = img.bytes.subarray(half, half + chunk);
  await new Promise<void>((resolve) => {
    const req = httpRequest(url + at, {
      method: 'PATCH',
      headers: {
        ...V,
        authorization: token,
        'content-type': 'application/offset+octet-stream',
        'content-length': String(cut.length),
        'upload-offset': String(half),
      },
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.write(cut.subarray(0, cut.length / 2), () => setImmediate(() => req.destroy()));
  });
  sent += cut.length / 2;
  // A client asks the offset and sends from there; while the server still settles the cut request, an empty
  // PATCH is refused 409 (nothing sent twice but headers).
  const asked = async () =>
    Number(
      (await fetch(url + at, { method: 'HEAD', headers: { ...V, authorization: token } })).headers.get('upload-offset'),
    );
  for (;;) {
    offset = await asked();
    if (
      await patch(url, token, at, offset, new Uint8Array(0)).then(
        () => true,
        () => false,
      )
    )
      break;
  }
  while (offset < img.bytes.length) {
    const part = img.bytes.subarray(offset, offset + chunk);
    sent += part.length;
    // On a busy server the cut request may reach the upload's lock only now, after the empty PATCH: 409, and the
    // client asks the offset again after a pause, as tus-js-client does (the refused chunk counts as sent).
    offset = await patch(url, token, at, offset, part).catch(async (e: unknown) => {
      if (!(e instanceof Error) || e.message !== 'PATCH: 409') throw e;
      await new Promise((resolve) => setTimeout(resolve, 250));
      return asked();
    });
  }
  await result(url, token, at);
  return sent - img.bytes.length;
}

async function deleteAll(url: string, token: string, ids: string[]): Promise<void> {
  for (const id of ids.splice(0)) {
    const res = await fetch(`${url}/api/upload/${id}`, { method: 'DELETE', headers: { authorization: token } });
    await res.arrayBuffer();
  }
}

export async function resumableBench(rec: Recorder, opts: ResumableOptions): Promise<void> {
  if (opts.db === 'postgres') {
    const why = await postgresUnavailable();
    if (why) return rec.note(`resumable uploads on PostgreSQL skipped: ${why}`);
  }
  let bucket: TestBucket | null = null;
  if (opts.store === 's3') {
    const why = await s3Unreachable();
    if (why) return rec.note(`resumable uploads on object storage skipped: ${why}`);
    bucket = await createTestBucket();
  }
  const images = await jpegs(2, opts.images);
  const bdb = await createBenchDatabase(opts.db);
  const app = await startServer({
    env: appEnv({
      ...bdb.env,
      ...(bucket ? bucket.env(undefined, 'media') : {}),
      WORKERS: '2',
      HUMAN_POLICY: 'off',
      RATE_LIMIT_UPLOAD: '100000/1h',
    }),
    logFile: path.join(bdb.dataDir, 'server.log'),
  }).catch(async (e: unknown) => {
    await bucket?.drop();
    throw e;
  });
  try {
    const reg = await fetch(`${app.url}/api/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        action: 'register',
        username: 'bench_tus',
        email: 'bench_tus@example.com',
        password: 'benchmark-password',
      }),
    });
    const token = `Bearer ${(await json(reg)).token as string}`;
    const ids: string[] = [];
    const round = (send: (img: BenchImage) => Promise<string>) => async () => {
      const t = performance.now();
      for (const img of images) ids.push(await send(img));
      const rate = images.length / ((performance.now() - t) / 1000);
      await deleteAll(app.url, token, ids);
      return rate;
    };
    const store = bucket ? ', media on the S3 server' : '';
    const label = `2 MP JPEG, ${opts.db === 'sqlite' ? 'SQLite' : 'PostgreSQL + Redis'}${store}, one client`;
    const withCreation = (s: { tusWithCreation: number[]; direct: number[] }) =>
      figure('resumable', `${label}: tus creation-with-upload ÷ direct`, '×', ratios(s.tusWithCreation, s.direct), {
        target: TARGETS.resumableVsDirect,
        note:
          'the file in the creation request, its answer in the 201 body (one request), as the CLI and ' +
          'tus-js-client (uploadDataDuringCreation) send it',
      });
    if (opts.ciOnly) {
      const guard = {
        direct: round((img) => direct(app.url, token, img)),
        tusWithCreation: round((img) => createWithUpload(app.url, token, img)),
      };
      await interleave(1, guard);
      rec.add(withCreation(await interleave(opts.rounds, guard)));
      return;
    }
    const subjects = {
      direct: round((img) => direct(app.url, token, img)),
      tusWhole: round((img) => resumable(app.url, token, img, img.bytes.length)),
      tusWithCreation: round((img) => createWithUpload(app.url, token, img)),
      tusChunked: round((img) => resumable(app.url, token, img, CHUNK)),
    };
    await interleave(1, subjects);
    const s = await interleave(opts.rounds, subjects);
    const resent: number[] = [];
    for (const img of images.slice(0, 3)) resent.push(await resentAfterCut(app.url, token, img, CHUNK));
    const mib = (images.reduce((n, i) => n + i.bytes.length, 0) / images.length / 2 ** 20).toFixed(2);
    rec.add(
      figure('resumable', `${label}: direct multipart uploads`, 'images/s', s.direct, { note: `${mib} MiB each` }),
      figure('resumable', `${label}: tus, one PATCH`, 'images/s', s.tusWhole),
      figure('resumable', `${label}: tus, 128 KiB PATCHes with sha256`, 'images/s', s.tusChunked),
      figure('resumable', `${label}: tus, creation-with-upload`, 'images/s', s.tusWithCreation),
      figure('resumable', `${label}: tus one PATCH ÷ direct`, '×', ratios(s.tusWhole, s.direct)),
      withCreation(s),
      figure('resumable', `${label}: tus 128 KiB ÷ direct`, '×', ratios(s.tusChunked, s.direct)),
      figure('resumable', `${label}: bytes sent twice after a cut mid-chunk at 50 %`, 'bytes', resent, {
        note: 'the cut PATCH carries no checksum, so the server keeps what arrived before the drop',
      }),
    );
  } finally {
    await app.stop();
    await bdb.dispose();
    await bucket?.drop();
  }
}

if (isMain(import.meta.url)) {
  await runAlone(
    'resumable',
    {
      db: { type: 'string', default: 'sqlite' },
      store: { type: 'string', default: 'disk' },
      rounds: { type: 'string', default: '5' },
      images: { type: 'string', default: '8' },
    },
    (rec, v) =>
      resumableBench(rec, {
        db: v.db as DbKind,
        store: v.store === 's3' ? 's3' : 'disk',
        rounds: Number(v.rounds),
        images: Number(v.images),
      }),
  );
}
