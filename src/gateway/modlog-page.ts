/**
 * The moderation log's page (`/modlog`, issue 30) as the server renders it: a page of GET /api/modlog as this
 * visitor sees it (moderators' names for admins only; uploads the public may not find are not named), in a table
 * that keeps its words whole (it scrolls sideways in its box on a narrow screen), and a link to the older entries
 * by cursor, so the log reads and pages with JavaScript off. web/pages/modlog.js builds the same markup
 * (test/http/web-render.test.ts compares them) and adopts this one: its "Older entries" link then loads the next
 * page in place.
 *
 * The times are UTC (`2026-11-27 09:30 UTC`), the same on both sides. Every string from an entry is escaped.
 */
import type { ModlogEntryView } from '../domain/moderation/moderation.service.ts';
import { el, text, utcDate } from './web-render.ts';

/** A page of the log, and how it was reached. */
export interface ModlogView {
  entries: ModlogEntryView[];
  /** The page shown by number (1 for the first), when it was not reached by cursor. */
  page: number;
  /** The cursor the page was reached by, if it was. */
  cursor: string | null;
  nextCursor: string | null;
}

/** web/pages/modlog.js's `modlogUrl`. */
function modlogUrl({ page, cursor }: { page?: number; cursor?: string | null }): string {
  if (cursor) return `/modlog?${new URLSearchParams({ cursor }).toString()}`;
  return page && page > 1 ? `/modlog?page=${page}` : '/modlog';
}

/** web/pages/modlog.js's `targetOf`: what a line acted on, by name. */
function targetOf(target: ModlogEntryView['target']): string {
  if (target.type === 'upload') {
    // A null id: an upload the public view may not name (private, held, removed while private).
    return target.id
      ? el('a', { href: `/uploads/${encodeURIComponent(target.id)}` }, 'an upload')
      : 'an upload (not public)';
  }
  if (target.type === 'user') return target.name ? `user ${el('b', {}, text(target.name))}` : 'a deleted user';
  if (target.type === 'vote_ring') return 'a vote ring';
  return target.name
    ? `blocklist entry ${el('code', { class: 'hash' }, text(`${target.name}…`))}`
    : 'a blocklist entry (since removed)';
}

/** web/pages/modlog.js's `row`. */
function row(e: ModlogEntryView): string {
  return el(
    'tr',
    {},
    el('td', {}, el('time', { datetime: e.at }, text(utcDate(e.at) ?? e.at))),
    el('td', {}, text(e.action.replaceAll('_', ' '))),
    el('td', {}, targetOf(e.target)),
    el('td', {}, text(e.reason ?? '')),
    e.moderator !== undefined ? el('td', {}, text(e.moderator?.username ?? 'automatic')) : '',
  );
}

/** What web/pages/modlog.js shows for a page of the log, as the content of `<main>`. */
export function modlogHtml({ entries, page, cursor, nextCursor }: ModlogView): string {
  const admin = entries.some((e) => e.moderator !== undefined);
  const heads = ['When', 'Action', 'Target', 'Reason', ...(admin ? ['Moderator'] : [])];
  const newer = cursor
    ? el('a', { href: modlogUrl({}) }, '← Newest entries')
    : page > 1
      ? el('a', { href: modlogUrl({ page: page - 1 }) }, '← Newer entries')
      : '';
  return [
    el('h1', {}, 'Moderation log'),
    el('p', { class: 'hint' }, 'Every moderation action, newest first. Nothing here is ever changed or deleted.'),
    entries.length
      ? el(
          'div',
          { class: 'scrollbox', role: 'region', 'aria-label': 'Moderation log', tabindex: 0 },
          el(
            'table',
            { class: 'modlog' },
            el('thead', {}, el('tr', {}, ...heads.map((t) => el('th', { scope: 'col' }, t)))),
            el('tbody', {}, ...entries.map(row)),
          ),
        )
      : el('p', {}, 'No moderation actions yet.'),
    el(
      'nav',
      { class: 'pager', 'aria-label': 'Pages' },
      newer,
      nextCursor ? el('a', { class: 'older', href: modlogUrl({ cursor: nextCursor }) }, 'Older entries →') : '',
    ),
    el('p', { class: 'status', role: 'status' }),
  ].join('');
}
