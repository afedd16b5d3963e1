// The public moderation log (`/modlog`): every moderation action, newest first, a page at a time. The server
// renders the page (src/gateway/views/modlog-view.ts, the view built below when the document has none): this
// module adopts it, and its "Older entries" link then loads the next page into the table (its own URL,
// `?cursor=…`, replaces the address).
import { api, explain } from '../lib/api.js';
import { h, setTitle, show, toDom } from '../lib/dom.js';
import { limits } from '../lib/limits.js';
import { modlogUrl, modlogView, rowView } from '../lib/modlog-view.js';

/**
 * @typedef {import('../lib/modlog-view.js').ModlogEntry} Entry
 * @typedef {{ entries: Entry[], has_more: boolean, next_cursor: string | null }} LogPage
 */

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
    const rows = data.entries.map((e) => /** @type {HTMLTableRowElement} */ (toDom(rowView(e))));
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
  // The server rendered the page (src/gateway/views/modlog-view.ts): adopted as it is.
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
    const { entries, next_cursor: nextCursor } = /** @type {LogPage} */ (r.data);
    show(modlogView({ entries, page, cursor, nextCursor }).map(toDom));
  }
  enhance(main);
}
