/**
 * Uploads: rows, their tags and their similarity-index entries, written in one transaction.
 * Queries are Kysely (through MikroORM's connection and transactions) so that they say exactly
 * which index they use.
 */
import type { Kysely } from 'kysely';
import type { BlocklistSeen, InsertRefusal, NewUpload, SharedMedia, UploadStore } from '../../domain/uploads/ports.ts';
import type { UploadRecord, VariantInfo, Viewer } from '../../domain/uploads/upload.types.ts';
import type { TagView } from '../../domain/tags.ts';
import type { PersonBox } from '../../domain/person-policy.ts';
import type { Provenance } from '../../domain/uploads/provenance.ts';
import type { AiLabel } from '../../domain/uploads/ai-label.ts';
import { isUuid } from '../../domain/ids.ts';
import type { Database } from '../database.ts';
import type { DB } from '../database-types.ts';
import { isUniqueViolation, type Dialect } from '../dialect.ts';
import type { SimilarityIndex } from '../similarity/similarity-index.ts';
import { uploadChunkColumns } from '../similarity/hamming.ts';
import { changingListing, leaveTagCounts, linkTags, tagsOf } from './tag-links.ts';
import { lockMedia, lockUpload, mediaReferenced, visibleTo } from '../upload-rows.ts';
import { hotRank } from '../../domain/ranking.ts';
import { appendModlog } from '../moderation/modlog.ts';
import { refreshQueueKey } from '../moderation/upload-states.ts';
import { emitQueueItem, emitUploadEvent } from '../webhooks/outbox.ts';
import { blocklisted, insertGuardReads, lockBlocklistForInsert } from '../moderation/insert-guard.ts';

/** Thrown inside an insert's transaction to roll it back: the owner is banned, or the bytes were blocklisted. */
class InsertRefused extends Error {
  readonly refusal: InsertRefusal;
  constructor(refusal: InsertRefusal) {
    super(refusal.refused);
    this.refusal = refusal;
  }
}

/** Columns of an upload record, with the owner's name. */
export const UPLOAD_COLUMNS = [
  'u.id',
  'u.user_id',
  'us.username',
  'u.upload_type',
  'u.filename',
  'u.original_name',
  'u.description',
  'u.external_url',
  'u.source_url',
  'u.upvotes',
  'u.downvote_count',
  'u.is_private',
  'u.created_at',
  'u.sha256',
  'u.phash',
  'u.media_key',
  'u.width',
  'u.height',
  'u.animated',
  'u.original_format',
  'u.thumbhash',
  'u.human_score',
  'u.human_boxes',
  'u.variants',
  'u.moderation',
  'u.person_flag',
  'u.moderated_at',
  'u.provenance',
  'u.ai_label',
] as const;

/** Upload records (with owner) from `uploads as u`; the caller adds where/order/limit. */
const selectUploads = (db: Kysely<DB>) =>
  db
    .selectFrom('uploads as u')
    .innerJoin('users as us', 'us.id', 'u.user_id')
    .select([...UPLOAD_COLUMNS]);

/** An upload row as `select()` reads it: the columns of UPLOAD_COLUMNS, typed by Kysely from database-types.ts. */
export type UploadRow = Awaited<ReturnType<ReturnType<typeof selectUploads>['executeTakeFirstOrThrow']>>;

export function rowToRecord(dialect: Dialect, r: UploadRow, tags: TagView[]): UploadRecord {
  return {
    id: r.id,
    userId: r.user_id,
    username: r.username,
    uploadType: r.upload_type,
    filename: r.filename,
    originalName: r.original_name,
    description: r.description,
    externalUrl: r.external_url,
    sourceUrl: r.source_url,
    upvotes: Number(r.upvotes),
    downvoteCount: Number(r.downvote_count),
    isPrivate: dialect.readBool(r.is_private),
    createdAt: dialect.readDate(r.created_at),
    sha256: r.sha256,
    phash: r.phash,
    mediaKey: r.media_key,
    width: r.width === null ? null : Number(r.width),
    height: r.height === null ? null : Number(r.height),
    animated: r.animated === null ? null : dialect.readBool(r.animated),
    originalFormat: r.original_format,
    thumbhash: r.thumbhash,
    humanScore: r.human_score === null ? null : Number(r.human_score),
    humanBoxes: typeof r.human_boxes === 'string' ? (JSON.parse(r.human_boxes) as PersonBox[]) : r.human_boxes,
    // jsonb arrives parsed (PostgreSQL), json as its text (SQLite).
    variants: typeof r.variants === 'string' ? (JSON.parse(r.variants) as Record<string, VariantInfo>) : r.variants,
    moderation: r.moderation,
    personFlag: dialect.readBool(r.person_flag),
    moderatedAt: r.moderated_at === null ? null : dialect.readDate(r.moderated_at),
    provenance: typeof r.provenance === 'string' ? (JSON.parse(r.provenance) as Provenance) : r.provenance,
    aiLabel: r.ai_label,
    tags,
  };
}

export class UploadRepository implements UploadStore {
  readonly #db: Database;
  readonly #similarity: SimilarityIndex;

  constructor(db: Database, similarity: SimilarityIndex) {
    this.#db = db;
    this.#similarity = similarity;
  }

  /** Selects upload records (with owner) from `uploads as u`; the caller adds where/order/limit. */
  select(db: Kysely<DB> = this.#db.db()) {
    return selectUploads(db);
  }

  /** Turns selected rows into records, fetching all their tags in one query. */
  async hydrate(rows: UploadRow[], db: Kysely<DB> = this.#db.db()): Promise<UploadRecord[]> {
    const tags = await tagsOf(
      db,
      rows.map((r) => r.id),
    );
    return rows.map((r) => rowToRecord(this.#db.dialect, r, tags.get(r.id) ?? []));
  }

  async #first(row: UploadRow | undefined): Promise<UploadRecord | null> {
    return row ? (await this.hydrate([row]))[0]! : null;
  }

  async findById(id: string): Promise<UploadRecord | null> {
    return isUuid(id) ? this.#first(await this.select().where('u.id', '=', id).executeTakeFirst()) : null;
  }

  async mediaKeyOf(id: string) {
    if (!isUuid(id)) return undefined;
    const row = await this.#db
      .db()
      .selectFrom('uploads')
      .select(['media_key', 'user_id', 'moderation'])
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? { mediaKey: row.media_key, userId: row.user_id, moderation: row.moderation } : undefined;
  }

  /** Whether any upload row uses these stored files (recovery: staged files of a committed row move in). */
  async isMediaReferenced(mediaKey: string): Promise<boolean> {
    return isUuid(mediaKey) && mediaReferenced(this.#db.db(), mediaKey);
  }

  /** Which of these media keys a row references (one query for a page of a store's listing). */
  async referencedAmong(mediaKeys: string[]): Promise<Set<string>> {
    const keys = mediaKeys.filter(isUuid);
    if (!keys.length) return new Set();
    const rows = await this.#db.db().selectFrom('uploads').select('media_key').where('media_key', 'in', keys).execute();
    return new Set(rows.map((r) => r.media_key).filter((k): k is string => k !== null));
  }

  async findVisibleBySha256(sha256: string, viewer: Viewer): Promise<UploadRecord | null> {
    const q = this.select().where('u.sha256', '=', sha256).where(visibleTo(this.#db.dialect, viewer));
    return this.#first(await q.orderBy('u.created_at').limit(1).executeTakeFirst());
  }

  /** For each digest with an upload the viewer may see, the oldest one's id (the batch pre-check; one query). */
  async visibleIdsBySha256(sha256s: readonly string[], viewer: Viewer): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    if (!sha256s.length) return found;
    const rows = await this.#db
      .db()
      .selectFrom('uploads as u')
      .select(['u.id', 'u.sha256'])
      .where('u.sha256', 'in', [...sha256s])
      .where(visibleTo(this.#db.dialect, viewer))
      .orderBy('u.created_at')
      .execute();
    for (const r of rows) if (r.sha256 && !found.has(r.sha256)) found.set(r.sha256, r.id);
    return found;
  }

  async findAnyBySha256(sha256: string): Promise<UploadRecord | null> {
    return this.#first(
      await this.select()
        .where('u.sha256', '=', sha256)
        .where('u.media_key', 'is not', null)
        .orderBy('u.created_at')
        .limit(1)
        .executeTakeFirst(),
    );
  }

  findNear(phash: string, maxDistance: number, viewer: Viewer) {
    return this.#similarity.findNear(this.#db.db(), phash, maxDistance, viewer);
  }

  async insert(u: NewUpload, tagNames: string[], opts: { shareMedia?: SharedMedia; blocklist?: BlocklistSeen } = {}) {
    const d = this.#db.dialect;
    try {
      return await this.#db.transaction(async (_em, db) => {
        // Shared files are referenced only while another row still references them, checked under their lock:
        // a delete that may release them takes it too, so it sees this row, or released them before we looked.
        const share = opts.shareMedia;
        let sharedMedia = false;
        if (share) {
          await lockMedia(db, d, share.mediaKey);
          sharedMedia = await mediaReferenced(db, share.mediaKey);
        }
        const media = sharedMedia ? share! : u;
        // Lock order: the stored files' lock (above), the blocklist's, then the new row and its owner's.
        await lockBlocklistForInsert(db, d);
        await db
          .insertInto('uploads')
          .values({
            id: u.id,
            user_id: u.userId,
            upload_type: u.uploadType,
            filename: u.filename,
            original_name: u.originalName,
            description: u.description,
            external_url: u.externalUrl,
            source_url: u.sourceUrl,
            is_private: d.bool(u.isPrivate),
            created_at: d.date(u.createdAt),
            hot_rank: hotRank(0, u.createdAt),
            sha256: u.sha256,
            phash: u.phash,
            ...uploadChunkColumns(u.phash),
            pdq: u.pdq,
            pdq_quality: u.pdqQuality,
            media_key: media.mediaKey,
            width: u.width,
            height: u.height,
            animated: u.animated === null ? null : d.bool(u.animated),
            original_format: u.originalFormat,
            thumbhash: u.thumbhash,
            human_score: u.humanScore,
            human_boxes: u.humanBoxes === null ? null : JSON.stringify(u.humanBoxes),
            variants: media.variants === null ? null : JSON.stringify(media.variants),
            moderation: u.moderation,
            person_flag: d.bool(u.personFlag),
            moderated_at: u.moderatedAt ? d.date(u.moderatedAt) : null,
            provenance: u.provenance === null ? null : JSON.stringify(u.provenance),
            ai_label: u.aiLabel,
          })
          .execute();
        // After that first write (SQLite: under the write lock; PostgreSQL: under the blocklist's lock and the
        // owner's row lock): a ban or blocklist entries committed since the upload's early checks refuse it here,
        // and a later ban's removal job or blocklist hold finds the row (insert-guard.ts).
        const guard = await insertGuardReads(db, d, u.userId, u.createdAt);
        if (guard.bannedUntil) throw new InsertRefused({ ok: false, refused: 'banned', until: guard.bannedUntil });
        const seen = opts.blocklist;
        if (
          u.sha256 &&
          seen &&
          guard.version !== seen.version &&
          (await blocklisted(db, d, u.sha256, u.phash, seen.distance, {
            hash: u.pdq,
            quality: u.pdqQuality,
            distance: seen.pdqDistance,
          }))
        )
          throw new InsertRefused({ ok: false, refused: 'blocked' });
        if (u.phash) await this.#similarity.add(db, u.id, u.phash);
        await linkTags(db, d, u.id, tagNames, u.createdAt);
        // Held from the start (HUMAN_POLICY=hold, AI_POLICY=hold): an automatic action, in the modlog with the
        // upload's commit.
        if (u.moderation === 'held') {
          await appendModlog(
            db,
            d,
            [
              {
                action: 'auto_hold',
                target: { type: 'upload', id: u.id },
                reason: u.autoHoldReason ?? 'held at upload',
                moderator: null,
              },
            ],
            u.createdAt,
          );
        }
        // Webhooks (outbox.ts): in this commit, so none is lost to a crash and none reports an upload rolled back.
        await emitUploadEvent(db, d, 'upload.processed', u.id, u.createdAt);
        if (u.moderation === 'held') await emitUploadEvent(db, d, 'upload.held', u.id, u.createdAt);
        if (u.moderation === 'held' || u.personFlag) {
          await refreshQueueKey(db, d, u.id);
          await emitQueueItem(db, d, u.id, u.moderation === 'held' ? 'held' : 'person_flag', u.createdAt);
        }
        return { ok: true as const, sharedMedia };
      });
    } catch (e) {
      if (e instanceof InsertRefused) return e.refusal;
      if (u.sha256 && isUniqueViolation(e)) {
        const first = await this.#db
          .db()
          .selectFrom('uploads')
          .select('id')
          .where('user_id', '=', u.userId)
          .where('sha256', '=', u.sha256)
          .executeTakeFirst();
        if (first) return { ok: false as const, duplicateOf: first.id };
      }
      throw e;
    }
  }

  /**
   * Removes the files of a key no row references, then its journal entry. Only the decision is made under the files'
   * lock: files whose last row went can never be referenced again (an insert shares only files a row still
   * references, `lockMedia`), so the removal itself (an S3 round trip) runs outside any transaction and holds no
   * lock, neither the key's on PostgreSQL nor SQLite's one write lock, which every other writer (in every process)
   * would otherwise wait for. The journal entry stays until the files are gone: a crash or a failed removal in
   * between leaves it for the sweep, which repeats the removal (removing absent files is not an error).
   */
  async releaseMedia(mediaKey: string, remove: () => Promise<void>): Promise<boolean> {
    const unreferenced = await this.#db.transaction(async (_em, db) => {
      await lockMedia(db, this.#db.dialect, mediaKey);
      if (!(await mediaReferenced(db, mediaKey))) return true;
      // Still (or again, through an insert that shared them before the last delete) referenced: nothing to release.
      await db.deleteFrom('media_garbage').where('media_key', '=', mediaKey).execute();
      return false;
    });
    if (!unreferenced) return false;
    await remove();
    await this.#db.db().deleteFrom('media_garbage').where('media_key', '=', mediaKey).execute();
    return true;
  }

  async pendingGarbage(limit = 1000): Promise<string[]> {
    const rows = await this.#db
      .db()
      .selectFrom('media_garbage')
      .select('media_key')
      .orderBy('created_at')
      .limit(limit)
      .execute();
    return rows.map((r) => r.media_key);
  }

  /** Under the row's lock, with the counts of its tags (which count listed uploads only) moved to match. */
  async setPrivacy(id: string, isPrivate: boolean): Promise<void> {
    const d = this.#db.dialect;
    await this.#db.transaction(async (_em, db) => {
      if (!(await lockUpload(db, d, id, ['id']))) return;
      await changingListing(db, d, id, () =>
        db
          .updateTable('uploads')
          .set({ is_private: d.bool(isPrivate) })
          .where('id', '=', id)
          .execute(),
      );
    });
  }

  /** The label `ai=exclude|only` filters on; one statement on the row (its tag links read it from there). */
  async setAiLabel(id: string, label: AiLabel | null): Promise<void> {
    await this.#db.db().updateTable('uploads').set({ ai_label: label }).where('id', '=', id).execute();
  }

  async delete(id: string) {
    if (!isUuid(id)) return null;
    const d = this.#db.dialect;
    return this.#db.transaction(async (_em, db) => {
      // A row's media key never changes: read it, then take the files' lock before the row's (the order
      // every transaction takes them in).
      const own = await db.selectFrom('uploads').select('media_key').where('id', '=', id).executeTakeFirst();
      const mediaKey = own?.media_key ?? null;
      if (mediaKey) await lockMedia(db, d, mediaKey);
      if (!(await lockUpload(db, d, id, ['id']))) return null;
      await leaveTagCounts(db, d, id);
      await this.#similarity.remove(db, id);
      // Votes and tag links go with the row (on delete cascade).
      await db.deleteFrom('uploads').where('id', '=', id).execute();
      // Under the files' lock, in a statement of its own: every row sharing them is committed and visible here.
      const mediaStillUsed = mediaKey ? await mediaReferenced(db, mediaKey) : false;
      if (mediaKey && !mediaStillUsed) {
        await db
          .insertInto('media_garbage')
          .values({ media_key: mediaKey, created_at: d.date(new Date()) })
          .onConflict((oc) => oc.doNothing())
          .execute();
      }
      return { mediaKey, mediaStillUsed };
    });
  }
}
