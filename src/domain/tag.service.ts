/** Tags of an upload (read by anyone, changed by its owner or an admin) and tag suggestions. */
import { errors } from './errors.ts';
import { Cursors, listingId } from './feeds/cursor.ts';
import { isUuid } from './ids.ts';
import type { Clock } from './clock.ts';
import type { Principal } from './users.ts';
import type { ModerationState } from './uploads/upload.types.ts';
import { assertReachable } from './moderation/access.ts';
import { isTagSlug, MAX_TAGS_PER_UPLOAD, normalizeTag, normalizeTags, slugOf, type TagView } from './tags.ts';

export interface TagSuggestion extends TagView {
  uploads: number;
}

export interface TagStore {
  /** The upload's owner and moderation state, or null when there is no such upload. */
  ownerOf(uploadId: string): Promise<{ userId: string; moderation: ModerationState } | null>;
  tagsOf(uploadId: string): Promise<TagView[]>;
  /**
   * Adds the tags in one transaction unless the upload would then carry more than `max`;
   * returns the new total or the would-be count.
   */
  add(
    uploadId: string,
    names: string[],
    max: number,
    at: Date,
  ): Promise<{ ok: true; tags: TagView[] } | { ok: false; wouldHave: number } | null>;
  remove(uploadId: string, slug: string): Promise<boolean>;
  /**
   * Tags named `prefix`…, most used first (then by name); after `after` (the last tag of the previous page: its
   * count then and its id, whose name the store looks up) when given; `fetch` rows at most.
   */
  suggest(prefix: string, after: { uploads: number; id: string } | null, fetch: number): Promise<TagSuggestion[]>;
}

export class TagService {
  readonly #tags: TagStore;
  readonly #clock: Clock;
  readonly #onChanged: () => Promise<void>;
  readonly #cursors: Cursors;

  constructor(deps: { tags: TagStore; clock: Clock; onChanged?: () => Promise<void>; cursors?: Cursors }) {
    this.#cursors = deps.cursors ?? new Cursors();
    this.#tags = deps.tags;
    this.#clock = deps.clock;
    this.#onChanged = deps.onChanged ?? (async () => {});
  }

  async list(reader: Principal | null, uploadId: string): Promise<TagView[]> {
    await this.#ownerOf(reader, uploadId);
    return this.#tags.tagsOf(uploadId);
  }

  async add(principal: Principal, uploadId: string, raw: string[]): Promise<TagView[]> {
    await this.#mayEdit(principal, uploadId);
    const names = normalizeTags(raw);
    const r = await this.#tags.add(uploadId, names, MAX_TAGS_PER_UPLOAD, this.#clock.now());
    if (!r) throw errors.notFound(`upload ${uploadId} does not exist`);
    if (!r.ok)
      throw errors.tooManyTags(
        `upload would have ${r.wouldHave} tags; the limit is ${MAX_TAGS_PER_UPLOAD}; nothing was added`,
      );
    await this.#onChanged();
    return r.tags;
  }

  async remove(principal: Principal, uploadId: string, slugOrName: string): Promise<TagView[]> {
    await this.#mayEdit(principal, uploadId);
    const slug = slugOf(normalizeTag(slugOrName));
    // A slug no tag could have (bad characters, too long) is simply not there: no query for it.
    if (!isTagSlug(slug) || !(await this.#tags.remove(uploadId, slug)))
      throw errors.notFound(`upload ${uploadId} has no tag "${slug}"`);
    await this.#onChanged();
    return this.#tags.tagsOf(uploadId);
  }

  /**
   * Tag search, a page at a time: `next_cursor` leads on after the last tag shown (keyset on count and name, so a
   * page reads only its own rows from the index). A tag whose count changed meanwhile may move past the cursor.
   */
  async suggest(
    q: string,
    limit: number,
    cursorText?: string,
  ): Promise<{ tags: TagSuggestion[]; next_cursor: string | null }> {
    const prefix = normalizeTag(q);
    const listing = listingId(['tags', prefix, limit]);
    const cursor = cursorText ? this.#cursors.decode(listing, cursorText) : null;
    const after = cursor ? { uploads: cursor.after.pos.key ?? 0, id: cursor.after.pos.id } : null;
    const rows = await this.#tags.suggest(prefix, after, limit + 1);
    const tags = rows.slice(0, limit);
    const last = tags.at(-1);
    const next =
      rows.length > limit && last
        ? this.#cursors.encode(listing, {
            page: (cursor?.page ?? 1) + 1,
            after: { since: this.#clock.now(), pos: { key: last.uploads, createdAt: new Date(0), id: last.id } },
          })
        : null;
    return { tags, next_cursor: next };
  }

  /** The owner of an upload the reader may reach (held: owner and admins; removed: admins). */
  async #ownerOf(reader: Principal | null, uploadId: string): Promise<string> {
    const found = isUuid(uploadId) ? await this.#tags.ownerOf(uploadId) : null;
    if (!found) throw errors.notFound(`upload ${uploadId} does not exist`);
    assertReachable({ id: uploadId, ...found }, reader);
    return found.userId;
  }

  async #mayEdit(principal: Principal, uploadId: string): Promise<void> {
    const owner = await this.#ownerOf(principal, uploadId);
    if (owner !== principal.userId && !principal.isAdmin)
      throw errors.forbidden(`only the owner or an admin may change the tags of upload ${uploadId}`);
  }
}
