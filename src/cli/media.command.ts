/**
 * `pixvote media migrate --to s3|disk`: the operator's command that moves stored image variants between local disk
 * ($DATA_DIR/media) and object storage (MEDIA_STORE=s3://BUCKET[/PREFIX], with the AWS SDK's variables), run on a
 * machine with the server's environment (the database directly, as `pixvote admin` does).
 *
 * Every variant of every upload row is copied, then read back from the target and verified by SHA-256 against
 * the source. Rows are walked in the order they were created, with a cursor saved after each one in
 * $DATA_DIR/media-migrate-<to>.json: an interrupted run resumes there, and uploads made while it runs (the
 * service keeps serving from the source) are reached before it ends. A variant already in the target with the
 * same hash is not copied again. Re-run it after switching MEDIA_STORE: it copies what came in between.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CliError, parseCommandArgs } from './cli-config.store.ts';
import { databaseOf } from './admin.command.ts';
import { resolveDataDir } from '../data-dir.ts';

export const MEDIA_USAGE = `usage: pixvote media migrate --to s3|disk [--batch N]
       pixvote media backfill-pdq [--batch N]

  Copies every stored image variant to object storage (--to s3) or to local disk (--to disk), verifying each
  copy by SHA-256, with progress. Run it with the server's environment: DATABASE_URL or DATA_DIR, DATA_DIR (the
  disk side: $DATA_DIR/media), MEDIA_STORE=s3://BUCKET[/PREFIX] and AWS_ENDPOINT_URL, AWS_REGION,
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (the object storage side). It can run while the service serves; an
  interrupted run resumes where it stopped ($DATA_DIR/media-migrate-<to>.json). Then point the servers at the
  target (set or unset MEDIA_STORE), restart them, and run it once more to copy what came in between.

  backfill-pdq: computes the PDQ hash of every image stored before pixvote computed PDQ (from its stored full
  variant: the original bytes are not kept) and holds, as the blocklist's hold job does, any visible upload whose
  PDQ (quality ≥ 50) is within BLOCKLIST_PDQ_DISTANCE of a blocklisted PDQ. Safe to run while the service serves
  and to run again: only rows without a PDQ are touched.
`;

interface Cursor {
  createdAt: string;
  id: string;
}

/** Hashes a stream while it goes through. */
async function sha256Of(stream: Readable): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of stream) h.update(chunk as Buffer);
  return h.digest('hex');
}

export async function runMedia(
  args: string[],
  out: NodeJS.WritableStream,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { values, positionals } = parseCommandArgs('media', {
    args,
    allowPositionals: true,
    options: { to: { type: 'string' }, batch: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) return (out.write(MEDIA_USAGE), 0);
  if (positionals[0] === 'backfill-pdq' && positionals.length === 1 && values.to === undefined)
    return backfillPdqCommand(batchOf(values.batch), out, env);
  if (positionals[0] !== 'migrate' || positionals.length !== 1 || (values.to !== 's3' && values.to !== 'disk'))
    throw new CliError(MEDIA_USAGE.trimEnd());
  const to = values.to;
  const batch = batchOf(values.batch);
  if (!env.MEDIA_STORE) throw new CliError('media migrate: MEDIA_STORE=s3://BUCKET[/PREFIX] names the object storage');

  const { mediaStoreOf } = await import('../config.ts');
  const { openDatabase } = await import('../store/database.ts');
  const { FileMediaStore, VARIANTS } = await import('../store/media-store.ts');
  const { S3MediaStore } = await import('../store/s3-media-store.ts');
  const dataDir = resolveDataDir(env.DATA_DIR);
  const disk = new FileMediaStore(dataDir);
  const s3 = new S3MediaStore(dataDir, mediaStoreOf(env.MEDIA_STORE, env));
  try {
    await s3.check('start');
  } catch (e) {
    s3.client.destroy();
    throw new CliError((e as Error).message, 1);
  }
  const where = databaseOf(env);
  const db = await openDatabase({ ...where, poolSize: 2 }).catch((e: Error) => {
    s3.client.destroy();
    throw new CliError(`cannot open the database ${where.label}: ${e.message}`, 1);
  });
  const cursorFile = join(dataDir, `media-migrate-${to}.json`);
  let cursor: Cursor | null = await readFile(cursorFile, 'utf8')
    .then((t) => JSON.parse(t) as Cursor)
    .catch(() => null);

  /** Copies one variant unless the target has it with the source's hash; returns what happened. */
  const copy = async (key: string, v: (typeof VARIANTS)[number]): Promise<'copied' | 'present' | 'missing'> => {
    const path = disk.variantPath(key, v);
    if (to === 's3') {
      const source = await sha256Of(createReadStream(path)).catch(() => null);
      if (source === null) return 'missing';
      const existing = await s3.read(key, v);
      if (existing && 'body' in existing && (await sha256Of(existing.body)) === source) return 'present';
      await s3.putFile(s3.objectKey(key, v), path);
      const back = await s3.read(key, v);
      const got = back && 'body' in back ? await sha256Of(back.body) : null;
      if (got !== source) throw new Error(`media ${key}.${v}: the copy in the store does not match (sha256)`);
      return 'copied';
    }
    const source = await s3.read(key, v);
    if (!source || !('body' in source)) return 'missing';
    const existing = await sha256Of(createReadStream(path)).catch(() => null);
    // The source is read once: hashed as it is written to a temp file, renamed into place once verified.
    const tmp = `${path}.migrating-${process.pid}`;
    await mkdir(dirname(path), { recursive: true });
    const h = createHash('sha256');
    source.body.on('data', (c: Buffer) => h.update(c));
    await pipeline(source.body, createWriteStream(tmp));
    const want = h.digest('hex');
    if (existing === want) {
      await rm(tmp, { force: true });
      return 'present';
    }
    if ((await sha256Of(createReadStream(tmp))) !== want) {
      await rm(tmp, { force: true });
      throw new Error(`media ${key}.${v}: the copy on disk does not match (sha256)`);
    }
    await rename(tmp, path);
    return 'copied';
  };

  const counts = { rows: 0, copied: 0, present: 0, missing: 0, bytes: 0 };
  const total = Number(
    (
      await db
        .db()
        .selectFrom('uploads')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('media_key', 'is not', null)
        .executeTakeFirstOrThrow()
    ).n,
  );
  out.write(
    `migrating ${total} uploads' media to ${to === 's3' ? s3.description : `${disk.root}`}` +
      `${cursor ? ` (resuming after ${cursor.createdAt} ${cursor.id})` : ''}\n`,
  );
  let last = Date.now();
  try {
    for (;;) {
      let q = db
        .db()
        .selectFrom('uploads')
        .select(['id', 'media_key', 'created_at'])
        .where('media_key', 'is not', null)
        .orderBy('created_at')
        .orderBy('id')
        .limit(batch);
      if (cursor) {
        const c = cursor;
        const at = db.dialect.date(new Date(c.createdAt));
        q = q.where((eb) =>
          eb.or([eb('created_at', '>', at), eb.and([eb('created_at', '=', at), eb('id', '>', c.id)])]),
        );
      }
      const rows = await q.execute();
      if (!rows.length) break;
      for (const row of rows) {
        const results = await Promise.all(VARIANTS.map((v) => copy(row.media_key!, v)));
        for (const r of results) counts[r]++;
        counts.rows++;
        cursor = { createdAt: new Date(row.created_at).toISOString(), id: row.id };
      }
      await writeFile(cursorFile, JSON.stringify(cursor));
      if (Date.now() - last > 1000) {
        last = Date.now();
        out.write(
          `  ${counts.rows} uploads checked: ${counts.copied} variants copied, ${counts.present} already there\n`,
        );
      }
    }
  } finally {
    await db.close();
    s3.client.destroy();
  }
  out.write(
    `done: ${counts.rows} uploads, ${counts.copied} variants copied and verified by sha256, ` +
      `${counts.present} already there, ${counts.missing} missing in the source (deleted meanwhile)\n`,
  );
  return 0;
}

function batchOf(text: string | undefined): number {
  const batch = Number(text ?? 200);
  if (!Number.isInteger(batch) || batch < 1) throw new CliError('media: --batch expects a positive integer');
  return batch;
}

/** `pixvote media backfill-pdq` (store/moderation/pdq-backfill.ts), on the server's database and media store. */
async function backfillPdqCommand(batch: number, out: NodeJS.WritableStream, env: NodeJS.ProcessEnv): Promise<number> {
  const { mediaStoreOf, loadConfig } = await import('../config.ts');
  const { openDatabase } = await import('../store/database.ts');
  const { FileMediaStore } = await import('../store/media-store.ts');
  const { S3MediaStore } = await import('../store/s3-media-store.ts');
  const { backfillPdq } = await import('../store/moderation/pdq-backfill.ts');
  const { pdqOfEncoded } = await import('../workers/pipeline/pdq.stage.ts');
  const dataDir = resolveDataDir(env.DATA_DIR);
  const media = env.MEDIA_STORE
    ? new S3MediaStore(dataDir, mediaStoreOf(env.MEDIA_STORE, env))
    : new FileMediaStore(dataDir);
  const where = databaseOf(env);
  const db = await openDatabase({ ...where, poolSize: 2 }).catch((e: Error) => {
    if (media instanceof S3MediaStore) media.client.destroy();
    throw new CliError(`cannot open the database ${where.label}: ${e.message}`, 1);
  });
  try {
    const maxDistance = loadConfig(env).blocklistPdqDistance;
    const counts = await backfillPdq(
      db,
      { read: (key, variant) => media.read(key, variant), hash: pdqOfEncoded },
      {
        batch,
        maxDistance,
        at: () => new Date(),
        progress: (c) => out.write(`  ${c.hashed} hashed, ${c.held} held, ${c.missing} unreadable so far\n`),
      },
    );
    out.write(
      `backfill-pdq: ${counts.hashed} uploads hashed, ${counts.held} held (their PDQ is blocklisted), ` +
        `${counts.missing} without a readable full variant\n`,
    );
    return 0;
  } finally {
    await db.close();
    if (media instanceof S3MediaStore) media.client.destroy();
  }
}
