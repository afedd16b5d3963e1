/**
 * The moderation log's page (`/modlog`, issue 30): a page of GET /api/modlog as its visitor sees it (moderators'
 * names for admins only; uploads the public may not find are not named), in a table that keeps its words whole
 * (it scrolls sideways in its box on a narrow screen), and links to newer and older entries, so the log reads and
 * pages with JavaScript off. The server writes it (src/gateway/routes/web.routes.ts); web/pages/modlog.js adopts
 * it, or builds this same view, and its "Older entries" link then appends the next page's rows (`rowView`).
 * The times are UTC (`2026-11-27 09:30 UTC`), the same on both sides.
 */
import { h, type VChild, type VNode } from './vnode.ts';
import { utcDate } from './words.ts';

/** A line of the log as GET /api/modlog shows it (`moderator` only for admins, null for an automatic action). */
export interface ModlogEntry {
  at: string;
  action: string;
  reason: string | null;
  target: { type: string; id?: string | null; name?: string | null };
  moderator?: { username: string } | null;
}

/** A page of the log, and how it was reached. */
export interface ModlogView {
  entries: ModlogEntry[];
  /** The page shown by number (1 for the first), when it was not reached by cursor. */
  page: number;
  /** The cursor the page was reached by, if it was. */
  cursor: string | null;
  nextCursor: string | null;
}

/** A page of the log by its cursor, or by number. */
export function modlogUrl({ page, cursor }: { page?: number; cursor?: string | null }): string {
  if (cursor) return `/modlog?${new URLSearchParams({ cursor }).toString()}`;
  return page && page > 1 ? `/modlog?page=${page}` : '/modlog';
}

/** What a line acted on, by name: the upload's link, the user's name, the blocklist entry's hash (its start). */
function targetOf(target: ModlogEntry['target']): VChild {
  if (target.type === 'upload') {
    // A null id: an upload the public view may not name (private, held, removed while private).
    return target.id
      ? h('a', { href: `/uploads/${encodeURIComponent(target.id)}` }, 'an upload')
      : 'an upload (not public)';
  }
  if (target.type === 'user') return target.name ? ['user ', h('b', {}, target.name)] : 'a deleted user';
  if (target.type === 'vote_ring') return 'a vote ring';
  return target.name
    ? ['blocklist entry ', h('code', { class: 'hash' }, `${target.name}…`)]
    : 'a blocklist entry (since removed)';
}

/** One line of the log, as a table row. */
export function rowView(e: ModlogEntry): VNode {
  return h(
    'tr',
    {},
    h('td', {}, h('time', { datetime: e.at }, utcDate(e.at) ?? e.at)),
    h('td', {}, e.action.replaceAll('_', ' ')),
    h('td', {}, targetOf(e.target)),
    h('td', {}, e.reason ?? ''),
    e.moderator !== undefined ? h('td', {}, e.moderator?.username ?? 'automatic') : null,
  );
}

/** The content of `<main>` for a page of the log. */
export function modlogView({ entries, page, cursor, nextCursor }: ModlogView): VNode[] {
  const admin = entries.some((e) => e.moderator !== undefined);
  const heads = ['When', 'Action', 'Target', 'Reason', ...(admin ? ['Moderator'] : [])];
  return [
    h('h1', {}, 'Moderation log'),
    h('p', { class: 'hint' }, 'Every moderation action, newest first. Nothing here is ever changed or deleted.'),
    entries.length
      ? h(
          'div',
          { class: 'scrollbox', role: 'region', 'aria-label': 'Moderation log', tabindex: 0 },
          h(
            'table',
            { class: 'modlog' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                heads.map((t) => h('th', { scope: 'col' }, t)),
              ),
            ),
            h('tbody', {}, entries.map(rowView)),
          ),
        )
      : h('p', {}, 'No moderation actions yet.'),
    h(
      'nav',
      { class: 'pager', 'aria-label': 'Pages' },
      cursor
        ? h('a', { href: modlogUrl({}) }, '← Newest entries')
        : page > 1
          ? h('a', { href: modlogUrl({ page: page - 1 }) }, '← Newer entries')
          : null,
      nextCursor ? h('a', { class: 'older', href: modlogUrl({ cursor: nextCursor }) }, 'Older entries →') : null,
    ),
    h('p', { class: 'status', role: 'status' }),
  ];
}
