/**
 * The moderation queue as `GET /api/admin/moderation` answers it: vote-ring items first (open: oldest first;
 * closed: most recently closed first), then the upload items in their own order (open: held first, then most
 * reports, then oldest). Vote-ring items are few and each asks for a decision on many votes, so they lead.
 */
import type { Page, QueueItemView } from './moderation.service.ts';
import type { VoteRingItemView } from './vote-rings.service.ts';

export type AnyQueueItem = QueueItemView | VoteRingItemView;

export async function queuePage(
  status: 'open' | 'closed',
  page: Page,
  sources: {
    rings: {
      count(status: 'open' | 'closed'): Promise<number>;
      list(status: 'open' | 'closed', offset: number, limit: number): Promise<VoteRingItemView[]>;
    };
    uploads(status: 'open' | 'closed', offset: number, limit: number): Promise<QueueItemView[]>;
  },
): Promise<{ items: AnyQueueItem[]; has_more: boolean }> {
  const offset = (page.page - 1) * page.limit;
  // One more than a page, to say whether there are more.
  const want = page.limit + 1;
  const rings = await sources.rings.count(status);
  const items: AnyQueueItem[] = offset < rings ? await sources.rings.list(status, offset, want) : [];
  if (items.length < want)
    items.push(...(await sources.uploads(status, Math.max(0, offset - rings), want - items.length)));
  return { items: items.slice(0, page.limit), has_more: items.length > page.limit };
}
