/**
 * The feed (`/`) and a user's uploads (`/u/{username}`) as one page of them: the heading, the sort links and tag
 * filter, the way back to newer pages, the grid of cards, the status line and the "More uploads" link. The
 * server writes the first page into the document (src/gateway/routes/web.routes.ts), so the thumbnails paint
 * before any script; web/pages/feed.js adopts that markup, or builds this same view when the document has none.
 */
import { cardView, userPath, type Upload } from './card-view.ts';
import { h, type VNode } from './vnode.ts';

/** The sorts, by their query value and label. */
export const SORTS: ReadonlyArray<readonly [string, string]> = [
  ['new', 'New'],
  ['top', 'Top'],
  ['hot', 'Hot'],
  ['best', 'Best'],
];

/** The `ai` filters, by their query value ('' for none) and label. */
export const AI_FILTERS: ReadonlyArray<readonly [string, string]> = [
  ['', 'All'],
  ['exclude', 'Without AI'],
  ['only', 'Made with AI'],
];

/** Where a feed page is: its sort, tag (slug), user ('' for everyone's), ai filter, and its page number or cursor. */
export interface FeedPlace {
  sort?: string;
  tag?: string;
  user?: string;
  ai?: string;
  page?: number;
  cursor?: string | null;
}

/** A page by its cursor, or by number; of a user's uploads when `user` is set. */
export function feedUrl({ sort, tag, user, ai, page, cursor }: FeedPlace): string {
  const q = new URLSearchParams();
  if (sort && sort !== 'new') q.set('sort', sort);
  if (tag) q.set('tag', tag);
  if (ai) q.set('ai', ai);
  if (cursor) q.set('cursor', cursor);
  else if (page && page > 1) q.set('page', String(page));
  const s = q.toString();
  const path = user ? userPath(user) : '/';
  return s ? `${path}?${s}` : path;
}

/** The page's heading. */
export function feedHeading(tag: string, user: string): string {
  if (user) return `Uploads by ${user}${tag ? ` tagged “${tag}”` : ''}`;
  return tag ? `Uploads tagged “${tag}”` : 'Latest uploads';
}

/** What an empty feed says. */
export function emptyText(tag: string, user: string): string {
  if (tag) return 'No uploads with this tag yet.';
  return user ? 'No public uploads yet.' : 'Nothing here yet: be the first to upload.';
}

export interface FeedView {
  sort: string;
  /** The tag as its slug ('' for none). */
  tag: string;
  /** Whose uploads (`/u/{username}`; '' for everyone's). */
  user: string;
  /** The `ai` filter: 'only', 'exclude' or '' / absent (none). */
  ai?: string;
  /** The page shown by number (1 for the first), when it was not reached by cursor. */
  page: number;
  /** The cursor the page was reached by, if it was. */
  cursor: string | null;
  uploads: Upload[];
  hasMore: boolean;
  nextCursor: string | null;
  /** Whether a visitor is signed in (their cards have vote buttons). */
  signedIn: boolean;
  /** The time the cards' ages are told from (ms). */
  now: number;
  /** Characters in a tag (the filter's maxlength). */
  maxTagLength: number;
  /** Thumbnails loaded eagerly, from the first. */
  eagerThumbnails: number;
}

/** The way back from a page after the first: to the newest (reached by cursor) or the page before (by number). */
export function newerLink({ sort, tag, user, ai, page, cursor }: FeedPlace): { href: string; label: string } | null {
  if (cursor) return { href: feedUrl({ sort, tag, user, ai }), label: '← Newest uploads' };
  return page && page > 1 ? { href: feedUrl({ sort, tag, user, ai, page: page - 1 }), label: '← Newer page' } : null;
}

/** The content of `<main>` for a page of the feed. */
export function feedView(view: FeedView): VNode[] {
  const { sort, tag, user, uploads, hasMore, nextCursor } = view;
  const ai = view.ai ?? '';
  const context = { signedIn: view.signedIn, now: view.now };
  const newer = newerLink(view);
  return [
    h('h1', {}, feedHeading(tag, user)),
    h(
      'div',
      { class: 'controls' },
      h(
        'nav',
        { class: 'sorts', 'aria-label': 'Sort' },
        SORTS.map(([s, label]) =>
          h('a', { href: feedUrl({ sort: s, tag, user, ai }), 'aria-current': s === sort ? 'page' : null }, label),
        ),
      ),
      h(
        'nav',
        { class: 'aifilter', 'aria-label': 'Made with AI' },
        AI_FILTERS.map(([a, label]) =>
          h('a', { href: feedUrl({ sort, tag, user, ai: a }), 'aria-current': a === ai ? 'page' : null }, label),
        ),
      ),
      h(
        'form',
        { class: 'tagfilter', role: 'search', action: feedUrl({ user }), method: 'get' },
        h('label', { for: 'tag-filter' }, 'Tag'),
        h('input', { id: 'tag-filter', name: 'tag', value: tag, maxlength: view.maxTagLength, autocomplete: 'off' }),
        sort !== 'new' ? h('input', { type: 'hidden', name: 'sort', value: sort }) : null,
        ai ? h('input', { type: 'hidden', name: 'ai', value: ai }) : null,
        h('button', { type: 'submit' }, 'Filter'),
        tag ? h('a', { href: feedUrl({ sort, user, ai }) }, 'All tags') : null,
      ),
    ),
    newer ? h('p', {}, h('a', { href: newer.href }, newer.label)) : null,
    h(
      'ol',
      { class: 'grid', 'aria-label': 'Uploads' },
      uploads.map((u, i) => cardView(u, i < view.eagerThumbnails, context)),
    ),
    h('p', { class: 'status', role: 'status' }, uploads.length ? '' : emptyText(tag, user)),
    h(
      'a',
      { class: 'more button', href: feedUrl({ sort, tag, user, ai, cursor: nextCursor }), hidden: !hasMore },
      'More uploads',
    ),
  ].filter((n) => n !== null);
}
