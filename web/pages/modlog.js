// The public moderation log (`/modlog`): every moderation action, newest first, a page at a time.
import { api, explain } from '../lib/api.js';
import { h, scrollBox, setTitle, show, when } from '../lib/dom.js';

/**
 * What a line acted on, by name: the upload's link, the user's name, the blocklist entry's hash (its start).
 * @param {{ type: string, id: string | null, name?: string | null }} target
 */
function targetOf(target) {
  if (target.type === 'upload') {
    // A null id: an upload the public view may not name (private, held, removed while private).
    return target.id
      ? h('a', { href: `/uploads/${encodeURIComponent(target.id)}` }, 'an upload')
      : 'an upload (not public)';
  }
  if (target.type === 'user') return target.name ? ['user ', h('b', {}, target.name)] : 'a deleted user';
  return target.name
    ? ['blocklist entry ', h('code', { class: 'hash' }, `${target.name}…`)]
    : 'a blocklist entry (since removed)';
}

export async function render() {
  setTitle('Moderation log');
  const page = Math.max(1, Number.parseInt(new URLSearchParams(location.search).get('page') ?? '1', 10) || 1);
  const r = await api('GET', `/api/modlog?page=${page}&limit=50`);
  if (!r.ok) {
    show(h('h1', {}, 'Moderation log'), h('p', { class: 'alert error' }, explain(r)));
    return;
  }
  const rows = r.data.entries.map((/** @type {any} */ e) =>
    h(
      'tr',
      {},
      h('td', {}, when(e.at)),
      h('td', {}, e.action.replaceAll('_', ' ')),
      h('td', {}, targetOf(e.target)),
      h('td', {}, e.reason ?? ''),
      e.moderator !== undefined ? h('td', {}, e.moderator?.username ?? 'automatic') : null,
    ),
  );
  const admin = r.data.entries.some((/** @type {any} */ e) => e.moderator !== undefined);
  show(
    h('h1', {}, 'Moderation log'),
    h('p', { class: 'hint' }, 'Every moderation action, newest first. Nothing here is ever changed or deleted.'),
    rows.length
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
            h('tbody', {}, rows),
          ),
        )
      : h('p', {}, 'No moderation actions yet.'),
    h(
      'nav',
      { class: 'pager', 'aria-label': 'Pages' },
      page > 1 ? h('a', { href: `/modlog?page=${page - 1}` }, '← Newer') : null,
      r.data.has_more ? h('a', { href: `/modlog?page=${page + 1}` }, 'Older →') : null,
    ),
  );
}
