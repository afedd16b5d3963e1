/**
 * The bytes of resumable uploads received so far when the media are on disk: one file per upload under
 * DATA_DIR/resumable, shared by every gateway on that DATA_DIR (the offsets are the database's:
 * resumable.repository.ts). With MEDIA_STORE=s3://… they are an S3 multipart upload in the bucket instead
 * (s3-resumable-parts.ts).
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { errors } from '../domain/errors.ts';
import { ChecksumMismatch, type ResumableParts } from '../domain/uploads/resumable.ts';

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
    let written = 0;
    let broken = false;
    const hash = checksum ? createHash('sha256') : null;
    try {
      // Bytes past the acknowledged offset were never acknowledged (a PATCH cut mid-way, then a crash): cut.
      await fh.truncate(offset);
      try {
        for await (const chunk of body) {
          if (written + chunk.length > max) {
            await fh.truncate(offset);
            written = 0;
            throw errors.payloadTooLarge(`the body goes past Upload-Length (${max} bytes were left to send)`);
          }
          await fh.write(chunk, 0, chunk.length, offset + written);
          hash?.update(chunk);
          written += chunk.length;
        }
      } catch (e) {
        if ((e as { code?: string }).code === 'payload_too_large') throw e;
        // The connection broke: without a checksum, what arrived is kept (the client resumes after it).
        broken = true;
        if (hash) {
          await fh.truncate(offset);
          written = 0;
        }
      }
      if (hash && !broken && !hash.digest().equals(checksum!)) {
        await fh.truncate(offset);
        throw new ChecksumMismatch();
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    return { written, broken };
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
