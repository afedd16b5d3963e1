// The feed (`/`) and a user's public uploads (`/u/{username}`, the feed with its `user` filter): uploads by sort
// and tag, a page at a time, the next loaded on scrolling near the end. Pages after the first are reached by cursor
// (each page's `next_cursor`), however deep; each has its own URL (`?cursor=…`).
import { api, explain } from '../lib/api.js';
import { card, cardVotes, placeholder, userPath } from '../lib/cards.js';
import { ago, h, show } from '../lib/dom.js';
import { limits } from '../lib/limits.js';
/** @import { Upload } from '../lib/cards.js' */

/** @type {ReadonlyArray<readonly [string, string]>} */
const SORTS = [
  ['new', 'New'],
  ['top', 'Top'],
  ['hot', 'Hot'],
  ['best', 'Best'],
];

/** As the server folds a tag to its slug for the first page it embeds. @param {string} tag */
function slugify(tag) {
  return tag.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-');
}

/**
 * A page by its cursor, or by number; of a user's uploads when `user` is set.
 * @param {{ sort?: string, tag?: string, user?: string, page?: number, cursor?: string | null }} where
 */
function feedUrl({ sort, tag, user, page, cursor }) {
  const q = new URLSearchParams();
  if (sort && sort !== 'new') q.set('sort', sort);
  if (tag) q.set('tag', tag);
  if (cursor) q.set('cursor', cursor);
  else if (page && page > 1) q.set('page', String(page));
  const s = q.toString();
  const path = user ? userPath(user) : '/';
  return s ? `${path}?${s}` : path;
}

/** @param {string} tag @param {string} user */
function heading(tag, user) {
  if (user) return `Uploads by ${user}${tag ? ` tagged “${tag}”` : ''}`;
  return tag ? `Uploads tagged “${tag}”` : 'Latest uploads';
}

/** What an empty feed says. @param {string} tag @param {string} user */
function emptyText(tag, user) {
  if (tag) return 'No uploads with this tag yet.';
  return user ? 'No public uploads yet.' : 'Nothing here yet: be the first to upload.';
}

/**
 * The API query for one page of this feed, as the server builds it for the page it embeds.
 * @param {string} sort @param {string} tag @param {string} user @param {{ page: number } | { cursor: string }} at
 */
function feedQuery(sort, tag, user, at) {
  const q = new URLSearchParams('cursor' in at ? { cursor: at.cursor } : { page: String(at.page) });
  q.set('limit', String(limits.feedPageSize));
  q.set('sort', sort);
  if (tag) q.set('tag', tag);
  if (user) q.set('user', user);
  return q.toString();
}

/** @typedef {{ uploads: Upload[], has_more: boolean, next_cursor: string | null }} FeedPage */

/**
 * The first page the document came with: the same bytes GET /api/uploads answers for this query
 * (src/gateway/routes/web.routes.ts), or null.
 * @param {string} query
 */
function embeddedPage(query) {
  const embedded = document.getElementById('first-page');
  if (embedded?.dataset.query !== query) return null;
  return /** @type {FeedPage} */ (JSON.parse(embedded.textContent ?? ''));
}

export async function render() {
  const params = new URLSearchParams(location.search);
  const asked = params.get('sort');
  const sort = asked !== null && SORTS.some(([s]) => s === asked) ? asked : 'new';
  const tag = slugify(params.get('tag') ?? '');
  // `/u/{username}`: that user's uploads (the server answers that page only under the name's own spelling).
  const named = /^\/u\/([^/]+)$/.exec(location.pathname);
  const user = named ? decodeURIComponent(named[1] ?? '') : '';
  const first = Math.max(1, Number.parseInt(params.get('page') ?? '1', 10) || 1);
  const startCursor = params.get('cursor');
  /** Where the next page to load starts: this document's page first, then each page's next_cursor. */
  /** @type {{ page: number } | { cursor: string }} */
  let at = startCursor ? { cursor: startCursor } : { page: first };

  const embedded = embeddedPage(feedQuery(sort, tag, user, at));
  // The server rendered the first page into the document (src/gateway/web-render.ts, the same markup as below and
  // as card()): adopt it as it is, so the thumbnails it already shows are not built again.
  const main = /** @type {HTMLElement} */ (document.getElementById('main'));
  const served = main.querySelector(':scope > ol.grid');
  const servedStatus = main.querySelector(':scope > p.status');
  const servedMore = main.querySelector(':scope > a.more');
  /** @type {HTMLOListElement} */
  let grid;
  /** @type {HTMLParagraphElement} */
  let status;
  /** @type {HTMLAnchorElement} */
  let more;
  if (
    embedded &&
    served instanceof HTMLOListElement &&
    servedStatus instanceof HTMLParagraphElement &&
    servedMore instanceof HTMLAnchorElement &&
    served.children.length === embedded.uploads.length
  ) {
    grid = served;
    status = servedStatus;
    more = servedMore;
    main.setAttribute('aria-busy', 'false');
  } else {
    grid = h('ol', { class: 'grid', 'aria-label': 'Uploads' });
    status = h('p', { class: 'status', role: 'status' });
    more = h(
      'a',
      { class: 'more button', href: feedUrl({ sort, tag, user, page: first + 1 }), hidden: true },
      'More uploads',
    );
    show(
      h('h1', {}, heading(tag, user)),
      h(
        'div',
        { class: 'controls' },
        h(
          'nav',
          { class: 'sorts', 'aria-label': 'Sort' },
          SORTS.map(([s, label]) =>
            h('a', { href: feedUrl({ sort: s, tag, user }), 'aria-current': s === sort ? 'page' : null }, label),
          ),
        ),
        h(
          'form',
          { class: 'tagfilter', role: 'search', action: feedUrl({ user }), method: 'get' },
          h('label', { for: 'tag-filter' }, 'Tag'),
          h('input', {
            id: 'tag-filter',
            name: 'tag',
            value: tag,
            maxlength: limits.maxTagLength,
            autocomplete: 'off',
          }),
          sort !== 'new' ? h('input', { type: 'hidden', name: 'sort', value: sort }) : null,
          h('button', { type: 'submit' }, 'Filter'),
          tag ? h('a', { href: feedUrl({ sort, user }) }, 'All tags') : null,
        ),
      ),
      startCursor
        ? h('p', {}, h('a', { href: feedUrl({ sort, tag, user }) }, '← Newest uploads'))
        : first > 1
          ? h('p', {}, h('a', { href: feedUrl({ sort, tag, user, page: first - 1 }) }, '← Newer page'))
          : null,
      grid,
      status,
      more,
    );
  }

  let pagesShown = 0;
  let loading = false;
  /**
   * Shows a page that arrived: its cards appended (or, for the server's, their placeholders painted).
   * @param {FeedPage} data
   * @param {string | null} cursor what the page was asked for with
   * @param {boolean} focusFirst
   */
  function landed({ uploads, has_more, next_cursor }, cursor, focusFirst) {
    const eager = pagesShown === 0;
    /** @type {Element[]} */
    let cards;
    if (grid === served && pagesShown === 0) {
      cards = [...grid.children];
      const now = Date.now();
      uploads.forEach((u, i) => {
        const li = cards[i];
        if (!li) return;
        const img = li.querySelector('img');
        if (img && u.upload_type === 'image' && u.image) placeholder(img, u.image.thumbhash);
        cardVotes(li, u.id);
        // The server's "3 minutes ago" may be older than the page: its text brought up to date, the node kept.
        const time = li.querySelector('time[datetime]');
        const text = time && ago(time.getAttribute('datetime') ?? '', now);
        if (time && text !== time.textContent) time.textContent = text;
      });
    } else {
      cards = uploads.map((u, i) => card(u, eager && i < limits.eagerThumbnails));
      grid.append(...cards);
    }
    if (pagesShown > 0) history.replaceState(null, '', feedUrl({ sort, tag, user, cursor }));
    if (focusFirst && cards[0]) cards[0].querySelector('a')?.focus();
    pagesShown += 1;
    if (next_cursor) at = { cursor: next_cursor };
    more.href = feedUrl({ sort, tag, user, cursor: next_cursor });
    more.hidden = !has_more || !next_cursor;
    status.textContent = grid.children.length === 0 ? emptyText(tag, user) : '';
  }
  /** @param {boolean} focusFirst */
  async function load(focusFirst) {
    if (loading) return;
    loading = true;
    status.textContent = 'Loading…';
    const asked = at;
    const r =
      pagesShown === 0 && embedded
        ? { ok: true, status: 200, data: embedded }
        : await api('GET', `/api/uploads?${feedQuery(sort, tag, user, asked)}`);
    loading = false;
    if (!r.ok) {
      status.textContent = explain(r);
      return;
    }
    landed(/** @type {FeedPage} */ (r.data), 'cursor' in asked ? asked.cursor : null, focusFirst);
  }
  more.addEventListener('click', (e) => {
    e.preventDefault();
    void load(true);
  });
  await load(false);
  // Scrolling near the end loads the next page (its own URL replaces the address).
  if ('IntersectionObserver' in window) {
    new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting) && !more.hidden) void load(false);
      },
      { rootMargin: '600px' },
    ).observe(more);
  }
}
