// The public moderation log (`/modlog`): every moderation action, newest first, a page at a time. The server
// renders the page (src/gateway/modlog-page.ts, the same markup as below): this module adopts it, and its
// "Older entries" link then loads the next page into the table (its own URL, `?cursor=…`, replaces the address).
import { api, explain } from '../lib/api.js';
import { h, scrollBox, setTitle, show, utcDate } from '../lib/dom.js';
import { limits } from '../lib/limits.js';

/**
 * @typedef {{
 *   at: string, action: string, reason: string | null,
 *   target: { type: string, id: string | null, name?: string | null },
 *   moderator?: { username: string } | null,
 * }} Entry
 * @typedef {{ entries: Entry[], has_more: boolean, next_cursor: string | null }} LogPage
 */

/**
 * A page of the log by its cursor, or by number.
 * @param {{ page?: number, cursor?: string | null }} where
 */
function modlogUrl({ page, cursor }) {
  if (cursor) return `/modlog?${new URLSearchParams({ cursor }).toString()}`;
  return page && page > 1 ? `/modlog?page=${page}` : '/modlog';
}

/**
 * What a line acted on, by name: the upload's link, the user's name, the blocklist entry's hash (its start).
 * @param {Entry['target']} target
 */
function targetOf(target) {
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

/** @param {Entry} e */
function row(e) {
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

/**
 * The page built here, when the document came without the server's.
 * @param {LogPage} data @param {number} page @param {string | null} cursor
 */
function build({ entries, next_cursor }, page, cursor) {
  const admin = entries.some((e) => e.moderator !== undefined);
  show(
    h('h1', {}, 'Moderation log'),
    h('p', { class: 'hint' }, 'Every moderation action, newest first. Nothing here is ever changed or deleted.'),
    entries.length
      ? scrollBox(
          'Moderation log',
          h(
            'table',
            { class: 'modlog' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['When', 'Action', 'Target', 'Reason', ...(admin ? ['Moderator'] : [])].map((t) =>
                  h('th', { scope: 'col' }, t),
                ),
              ),
            ),
            h('tbody', {}, entries.map(row)),
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
      next_cursor ? h('a', { class: 'older', href: modlogUrl({ cursor: next_cursor }) }, 'Older entries →') : null,
    ),
    h('p', { class: 'status', role: 'status' }),
  );
}

/**
 * The "Older entries" link made to load the next page in place: its rows appended, its URL the address.
 * @param {HTMLElement} main
 */
function enhance(main) {
  const older = main.querySelector(':scope > nav.pager > a.older');
  const tbody = main.querySelector('table.modlog > tbody');
  const status = main.querySelector(':scope > p.status');
  if (!(older instanceof HTMLAnchorElement) || !tbody || !status) return;
  let loading = false;
  older.addEventListener('click', async (e) => {
    e.preventDefault();
    if (loading) return;
    const cursor = new URL(older.href).searchParams.get('cursor') ?? '';
    loading = true;
    status.textContent = 'Loading…';
    const q = new URLSearchParams({ cursor, limit: String(limits.modlogPageSize) });
    const r = await api('GET', `/api/modlog?${q.toString()}`);
    loading = false;
    if (!r.ok) {
      status.textContent = explain(r);
      return;
    }
    const data = /** @type {LogPage} */ (r.data);
    const rows = data.entries.map(row);
    tbody.append(...rows);
    history.replaceState(null, '', modlogUrl({ cursor }));
    status.textContent = '';
    if (data.next_cursor) older.href = modlogUrl({ cursor: data.next_cursor });
    else older.remove();
    rows[0]?.querySelector('a')?.focus();
  });
}

export async function render() {
  setTitle('Moderation log');
  const main = /** @type {HTMLElement} */ (document.getElementById('main'));
  // The server rendered the page (src/gateway/modlog-page.ts): adopted as it is.
  if (!main.querySelector(':scope > nav.pager')) {
    const params = new URLSearchParams(location.search);
    const page = Math.max(1, Number.parseInt(params.get('page') ?? '1', 10) || 1);
    const cursor = params.get('cursor');
    const q = new URLSearchParams(cursor ? { cursor } : { page: String(page) });
    q.set('limit', String(limits.modlogPageSize));
    const r = await api('GET', `/api/modlog?${q.toString()}`);
    if (!r.ok) {
      show(h('h1', {}, 'Moderation log'), h('p', { class: 'alert error' }, explain(r)));
      return;
    }
    build(/** @type {LogPage} */ (r.data), page, cursor);
  }
  enhance(main);
}
