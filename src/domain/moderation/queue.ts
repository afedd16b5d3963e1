/**
 * The moderation queue as `GET /api/admin/moderation` answers it: vote-ring items first (open: oldest first;
 * closed: most recently closed first), then the upload items in their own order (open: held first, then most
 * reports, then oldest; closed: most recently acted on first). Vote-ring items are few and each asks for a decision
 * on many votes, so they lead.
 *
 * It pages by number (its first 10 000 items) or by cursor (API.md, Listing and feeds). A cursor names the last
 * item shown: a vote ring's position has no rank (key null), an upload's carries its open-queue rank. So a moderator
 * paging on after acting on the items of a page skips nothing, which number pages would (each acted-on item leaves
 * the open queue and moves the rest up).
 */
import { checkPageDepth, listingId, type Cursors, type ListPosition, type PageStart } from '../feeds/cursor.ts';
import type { QueueItemView } from './moderation.service.ts';
import type { VoteRingItemView } from './vote-rings.service.ts';

export type AnyQueueItem = QueueItemView | VoteRingItemView;

type Status = 'open' | 'closed';

export interface QueueSources {
  /** Signs and checks `next_cursor` (the moderation service's). */
  cursors: Cursors;
  rings: {
    count(status: Status): Promise<number>;
    list(status: Status, start: PageStart, limit: number): Promise<VoteRingItemView[]>;
  };
  uploads(status: Status, start: PageStart, limit: number): Promise<Array<{ item: QueueItemView; pos: ListPosition }>>;
}

export async function queuePage(
  status: Status,
  q: { page: number; limit: number; cursor?: string | undefined },
  sources: QueueSources,
  now: Date,
): Promise<{ items: AnyQueueItem[]; page: number; has_more: boolean; next_cursor: string | null }> {
  const listing = listingId(['queue', status, q.limit]);
  const cursor = q.cursor ? sources.cursors.decode(listing, q.cursor) : null;
  if (!cursor) checkPageDepth(q.page, q.limit);
  // One more than a page, to say whether there are more.
  const want = q.limit + 1;
  const ringPos = (r: VoteRingItemView): ListPosition => ({
    key: null,
    createdAt: new Date(status === 'open' ? r.created_at : (r.closed_at ?? r.created_at)),
    id: r.id,
  });
  const rings = async (start: PageStart) =>
    (await sources.rings.list(status, start, want)).map((r) => ({ item: r, pos: ringPos(r) }));
  let rows: Array<{ item: AnyQueueItem; pos: ListPosition }>;
  let uploadStart: PageStart | null;
  if (!cursor) {
    const offset = (q.page - 1) * q.limit;
    const ringCount = await sources.rings.count(status);
    rows = offset < ringCount ? await rings({ offset }) : [];
    uploadStart = { offset: Math.max(0, offset - ringCount) };
  } else if (cursor.after.pos.key === null) {
    // Still among the vote rings.
    rows = await rings({ after: cursor.after });
    uploadStart = { offset: 0 };
  } else {
    rows = [];
    uploadStart = { after: cursor.after };
  }
  if (rows.length < want) rows.push(...(await sources.uploads(status, uploadStart, want - rows.length)));
  const shown = rows.slice(0, q.limit);
  const last = shown.at(-1);
  const page = cursor?.page ?? q.page;
  return {
    items: shown.map((r) => r.item),
    page,
    has_more: rows.length > q.limit,
    next_cursor:
      rows.length > q.limit && last
        ? sources.cursors.encode(listing, { page: page + 1, after: { since: now, pos: last.pos } })
        : null,
  };
}
