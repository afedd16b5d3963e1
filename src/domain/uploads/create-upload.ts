/**
 * `POST /api/upload` as one use case: the shutdown rule, the fields' rules, the `Idempotency-Key` claim and
 * replay, the byte source (a received file, a fetched URL, none for a link), the pipeline, duplicates, the
 * person policy and persistence (through UploadService), and the outcome every request ends in. The route
 * parses the request into an UploadRequest, makes one call and writes the UploadAnswer.
 */
import { createHash } from 'node:crypto';
import { AppError, errors } from '../errors.ts';
import type { IdempotencyService, StoredResponse } from '../idempotency.ts';
import { validateIdempotencyKey } from '../idempotency.ts';
import { parseTagList } from '../tags.ts';
import type { Principal } from '../users.ts';
import type { UploadService } from './upload.service.ts';
import type { CreateResult, UploadType, UploadView } from './upload.types.ts';

/** Bytes the client sent with the request (a multipart file received by the gateway), read only if processed. */
export interface ByteSource {
  /** SHA-256 of the bytes, hex, computed while they arrived. */
  sha256: string;
  /** The client's file name as sent (made safe before it is stored). */
  originalName: string | null;
  /** The bytes in an ArrayBuffer of their own (moved to a worker thread, not copied). */
  read(): Promise<ArrayBuffer>;
}

/** An upload request as the client sent it, parsed but not yet judged by the domain's rules. */
export interface UploadRequest {
  uploadType: 'image' | 'image_url' | 'link';
  description: string;
  /** The comma-separated `tags` field, as sent. */
  tags: string | undefined;
  isPrivate: boolean;
  /** For `image`: the received file, or null when none was sent. */
  file: ByteSource | null;
  imageUrl: string | undefined;
  externalUrl: string | undefined;
}

/** What the client is answered: the status and the serialized body (a replay answers the stored text). */
export interface UploadAnswer {
  status: number;
  body: string;
  /** Answered from an earlier request with the same Idempotency-Key. */
  replayed: boolean;
  /** The upload this answer is the record of (201), for `Location`; null for a duplicate notice. */
  created: { id: string; uploadType: UploadType } | null;
}

/** Every upload request's outcome, once (metrics): accepted by type, or rejected by the contract's code. */
export interface UploadOutcomes {
  accepted(type: UploadType): void;
  rejected(reason: string): void;
}

export interface CreateUploadDeps {
  uploads: UploadService;
  idempotency: IdempotencyService;
  /** True once a graceful shutdown has begun: new uploads are refused (503 busy) while in-flight ones finish. */
  isShuttingDown(): boolean;
  outcomes?: UploadOutcomes;
}

export class CreateUpload {
  readonly #deps: CreateUploadDeps;

  constructor(deps: CreateUploadDeps) {
    this.#deps = deps;
  }

  /**
   * Refuses a new upload while shutting down: the admission check, which the gateway makes before it reads a
   * body (no point receiving 10 MiB to refuse them). An upload admitted before the shutdown began is let
   * finish (`run` does not ask again): the drain waits for it.
   */
  assertAccepting(): void {
    if (this.#deps.isShuttingDown())
      throw errors.busy('the server is shutting down; retry (another instance will take it)', 5);
  }

  /**
   * Whether a request with this key will be answered from (or compared with) an earlier one: it spends no upload point.
   */
  async knownKey(principal: Principal, idempotencyKey: string): Promise<boolean> {
    return this.#deps.idempotency.known(principal.userId, validateIdempotencyKey(idempotencyKey));
  }

  /**
   * Creates the upload (or answers the duplicate notice, or replays the answer to the same Idempotency-Key).
   * `signal` aborts when the client goes: queued work is dropped and nothing is stored.
   */
  async run(
    principal: Principal,
    request: UploadRequest,
    opts: { idempotencyKey?: string | null; signal?: AbortSignal } = {},
  ): Promise<UploadAnswer> {
    try {
      const answer = await this.#run(principal, request, opts);
      // A replay stored nothing new: it was counted when it first ran.
      if (!answer.replayed) {
        if (answer.created) this.#deps.outcomes?.accepted(answer.created.uploadType);
        else this.#deps.outcomes?.rejected('duplicate');
      }
      return answer;
    } catch (e) {
      // By contract code, as the client sees it: a raw error's own code (ECONNREFUSED, 23505…) is not a reason.
      this.#deps.outcomes?.rejected(e instanceof AppError ? e.code : 'internal');
      throw e;
    }
  }

  async #run(
    principal: Principal,
    request: UploadRequest,
    opts: { idempotencyKey?: string | null; signal?: AbortSignal },
  ): Promise<UploadAnswer> {
    const key = opts.idempotencyKey ? validateIdempotencyKey(opts.idempotencyKey) : null;
    const tags = parseTagList(request.tags);
    const create = this.#creator(principal, request, tags);
    // `work` aborts when the client goes, or when an Idempotency-Key claim this request held cannot be kept.
    let created: Pick<UploadView, 'id' | 'upload_type'> | null = null;
    const respond = async (work: AbortSignal): Promise<StoredResponse> => {
      const result = await create(work);
      if (result.kind === 'duplicate') return { status: 200, body: JSON.stringify(result.notice) };
      created = result.upload;
      return { status: 201, body: JSON.stringify(result.upload) };
    };
    const signal = opts.signal ?? new AbortController().signal;
    const response = key
      ? await this.#deps.idempotency.run(principal.userId, key, fingerprint(request, tags), respond, signal)
      : { ...(await respond(signal)), replayed: false };
    // A replay answers stored text: the upload it names is read back from it.
    if (response.status === 201) created ??= JSON.parse(response.body) as Pick<UploadView, 'id' | 'upload_type'>;
    return { ...response, created: created && { id: created.id, uploadType: created.upload_type } };
  }

  /** The creation this request asks for, its required field checked before any work or claim. */
  #creator(
    principal: Principal,
    request: UploadRequest,
    tags: string[],
  ): (signal: AbortSignal) => Promise<CreateResult> {
    const common = { description: request.description, tags, isPrivate: request.isPrivate };
    const { uploads } = this.#deps;
    switch (request.uploadType) {
      case 'image': {
        const file = request.file;
        if (!file) throw errors.invalid('file is required when upload_type=image (multipart field "file")');
        // Read only if the bytes are processed (not for an exact duplicate).
        const input = {
          ...common,
          bytes: () => file.read(),
          sha256: file.sha256,
          originalName: file.originalName,
          sourceUrl: null,
        };
        return (signal) => uploads.createImage(principal, input, signal);
      }
      case 'image_url': {
        const imageUrl = request.imageUrl;
        if (!imageUrl) throw errors.invalid('image_url is required when upload_type=image_url');
        return (signal) => uploads.createFromUrl(principal, { ...common, imageUrl }, signal);
      }
      case 'link': {
        const externalUrl = request.externalUrl;
        if (!externalUrl) throw errors.invalid('external_url is required when upload_type=link');
        return () => uploads.createLink(principal, { ...common, externalUrl });
      }
    }
  }
}

/** What makes two requests with one Idempotency-Key the same request. */
function fingerprint(request: UploadRequest, tags: string[]): string {
  const fields = [
    request.uploadType,
    request.description,
    tags,
    request.isPrivate,
    request.imageUrl ?? null,
    request.externalUrl ?? null,
  ];
  return createHash('sha256')
    .update(JSON.stringify([...fields, request.uploadType === 'image' ? (request.file?.sha256 ?? null) : null]))
    .digest('hex');
}
