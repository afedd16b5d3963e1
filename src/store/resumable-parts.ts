/**
 * The bytes of resumable uploads received so far when the media are on disk: one file per upload under
 * DATA_DIR/resumable, shared by every gateway on that DATA_DIR (the offsets are the database's:
 * resumable.repository.ts). With MEDIA_STORE=s3://… they are an S3 multipart upload in the bucket instead
 * (s3-resumable-parts.ts).
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ChecksumMismatch, readBody, type ResumableParts } from '../domain/uploads/resumable.ts';

/** The ids of uploads (UUIDs): anything else in the directory or the bucket is not ours to judge. */
export const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Ids per page of the orphan sweep (one `in (…)` query each). */
export const ORPHAN_PAGE = 500;

export class FileResumableParts implements ResumableParts {
  readonly #dir: string;
  constructor(dataDir: string) {
    this.#dir = join(dataDir, 'resumable');
  }

  #path(id: string): string {
    return join(this.#dir, id);
  }

  async append(id: string, offset: number, body: AsyncIterable<Uint8Array>, max: number, checksum: Buffer | null) {
    await mkdir(this.#dir, { recursive: true });
    const fh = await open(this.#path(id), 'a+');
    const hash = checksum ? createHash('sha256') : null;
    try {
      // Bytes past the acknowledged offset were never acknowledged (a PATCH cut mid-way, then a crash): cut.
      await fh.truncate(offset);
      let got: { size: number; broken: boolean };
      try {
        got = await readBody(body, max, async (chunk, at) => {
          await fh.write(chunk, 0, chunk.length, offset + at);
          hash?.update(chunk);
        });
      } catch (e) {
        // Past Upload-Length: nothing of this PATCH is kept.
        await fh.truncate(offset);
        throw e;
      }
      // A body that broke off: without a checksum what arrived is kept; with one, nothing (it cannot be checked).
      if (hash && (got.broken || !hash.digest().equals(checksum!))) {
        await fh.truncate(offset);
        if (!got.broken) throw new ChecksumMismatch();
        got = { size: 0, broken: true };
      }
      await fh.sync();
      return { written: got.size, broken: got.broken };
    } finally {
      await fh.close();
    }
  }

  async source(id: string, length: number) {
    const path = this.#path(id);
    const hash = createHash('sha256');
    const fh = await open(path, 'r');
    try {
      for await (const chunk of fh.createReadStream({ start: 0, end: length - 1, autoClose: false }))
        hash.update(chunk as Buffer);
    } finally {
      await fh.close();
    }
    return {
      sha256: hash.digest('hex'),
      read: async () => {
        const buf = new ArrayBuffer(length);
        const f = await open(path, 'r');
        try {
          let off = 0;
          while (off < length) {
            const { bytesRead } = await f.read(new Uint8Array(buf, off), 0, length - off, off);
            if (bytesRead === 0) break;
            off += bytesRead;
          }
        } finally {
          await f.close();
        }
        return buf;
      },
    };
  }

  async remove(id: string): Promise<void> {
    await rm(this.#path(id), { force: true });
  }

  async *written(before: Date): AsyncGenerator<string[]> {
    const names = await readdir(this.#dir).catch(() => [] as string[]);
    let page: string[] = [];
    for (const name of names) {
      if (!UPLOAD_ID.test(name)) continue;
      const s = await stat(this.#path(name)).catch(() => null);
      if (!s || s.mtime >= before) continue;
      page.push(name);
      if (page.length === ORPHAN_PAGE) {
        yield page;
        page = [];
      }
    }
    if (page.length) yield page;
  }
}
