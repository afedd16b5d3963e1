/**
 * The media sweep as a service: recovery after a crash at start-up (every gateway, before it serves), then as
 * housekeeping every `everyMs`. Staged files of committed uploads move in, abandoned ones and deleted files go
 * (the journal of pending garbage is worked off); object storage also releases objects no row references once past
 * the sweep grace (one gateway at a time lists the bucket: S3MediaStore). Stored files are removed only under their
 * lock, and only while no row references them.
 */
import type { Logger } from 'pino';
import { periodic, type Service } from '../domain/service.ts';
import type { MediaReferences, StoredMedia } from './media-store.ts';
import type { UploadRepository } from './repositories/upload.repository.ts';

export class MediaSweep implements Service {
  readonly #media: StoredMedia;
  readonly #uploads: UploadRepository;
  readonly #log: Logger;
  readonly #refs: MediaReferences;
  readonly #housekeeping: Service;

  constructor(deps: {
    media: StoredMedia;
    uploads: UploadRepository;
    log: Logger;
    everyMs: number;
    /** A periodic sweep's failure (default: a warning with its stack). */
    onError?: (err: unknown) => void;
  }) {
    const { media, uploads, log } = deps;
    this.#media = media;
    this.#uploads = uploads;
    this.#log = log;
    this.#refs = {
      isReferenced: (key) => uploads.isMediaReferenced(key),
      referencedAmong: (keys) => uploads.referencedAmong(keys),
      release: (key) => this.release(key),
    };
    this.#housekeeping = periodic(
      deps.everyMs,
      () => this.sweep({ periodic: true }),
      deps.onError ?? ((err) => log.warn({ err }, 'media sweep failed')),
    );
  }

  /** Removes a key's stored files unless a row references it (under the files' lock; journalled). */
  release(key: string): Promise<boolean> {
    return this.#uploads.releaseMedia(key, () => this.#media.remove(key));
  }

  /** One sweep: as at start-up, or `periodic` (housekeeping; on object storage, listed by the lease's holder only). */
  async sweep(opts: { periodic?: boolean } = {}): Promise<void> {
    const staged = await this.#media.sweep(this.#refs, opts);
    const garbage = await this.#uploads.pendingGarbage();
    for (const key of garbage) await this.release(key);
    if (staged.committed || staged.discarded || staged.orphans || garbage.length)
      this.#log.info({ ...staged, removed: garbage.length }, 'media recovered');
  }

  async start(): Promise<void> {
    await this.sweep();
    await this.#housekeeping.start();
  }

  async stop(): Promise<void> {
    await this.#housekeeping.stop();
  }
}
