// The feed (`/`) and a user's public uploads (`/u/{username}`, the feed with its `user` filter): uploads by sort
// and tag, a page at a time, the next loaded on scrolling near the end. Pages after the first are reached by cursor
// (each page's `next_cursor`), however deep; each has its own URL (`?cursor=…`).
import { api, explain } from '../lib/api.js';
import { card, cardWorks } from '../lib/cards.js';
import { ago, ME, show, toDom } from '../lib/dom.js';
import { AI_FILTERS, emptyText, feedUrl, feedView, SORTS } from '../lib/feed-view.js';
import { limits } from '../lib/limits.js';
/** @import { Upload } from '../lib/cards.js' */

/** As the server folds a tag to its slug for the first page it embeds. @param {string} tag */
function slugify(tag) {
  return tag.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-');
}

/**
 * The API query for one page of this feed, as the server builds it for the page it embeds.
 * @param {string} sort @param {string} tag @param {string} user @param {string} ai
 * @param {{ page: number } | { cursor: string }} at
 */
function feedQuery(sort, tag, user, ai, at) {
  const q = new URLSearchParams('cursor' in at ? { cursor: at.cursor } : { page: String(at.page) });
  q.set('limit', String(limits.feedPageSize));
  q.set('sort', sort);
  if (tag) q.set('tag', tag);
  if (user) q.set('user', user);
  if (ai) q.set('ai', ai);
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
  const askedAi = params.get('ai') ?? '';
  const ai = AI_FILTERS.some(([a]) => a === askedAi) ? askedAi : '';
  // `/u/{username}`: that user's uploads (the server answers that page only under the name's own spelling).
  const named = /^\/u\/([^/]+)$/.exec(location.pathname);
  const user = named ? decodeURIComponent(named[1] ?? '') : '';
  const first = Math.max(1, Number.parseInt(params.get('page') ?? '1', 10) || 1);
  const startCursor = params.get('cursor');
  /** Where the next page to load starts: this document's page first, then each page's next_cursor. */
  /** @type {{ page: number } | { cursor: string }} */
  let at = startCursor ? { cursor: startCursor } : { page: first };

  const embedded = embeddedPage(feedQuery(sort, tag, user, ai, at));
  // The server rendered the first page into the document (src/gateway/views/feed-view.ts, the view built below):
  // adopted as it is, so the thumbnails it already shows are not built again.
  const main = /** @type {HTMLElement} */ (document.getElementById('main'));
  const adopted = Boolean(
    embedded && main.querySelector(':scope > ol.grid')?.children.length === embedded.uploads.length,
  );
  if (adopted) main.setAttribute('aria-busy', 'false');
  else {
    const view = feedView({
      sort,
      tag,
      user,
      ai,
      page: first,
      cursor: startCursor,
      uploads: [],
      hasMore: false,
      nextCursor: null,
      signedIn: Boolean(ME),
      now: Date.now(),
      maxTagLength: limits.maxTagLength,
      eagerThumbnails: limits.eagerThumbnails,
    });
    show(view.map(toDom));
  }
  const grid = /** @type {HTMLOListElement} */ (main.querySelector(':scope > ol.grid'));
  const status = /** @type {HTMLParagraphElement} */ (main.querySelector(':scope > p.status'));
  const more = /** @type {HTMLAnchorElement} */ (main.querySelector(':scope > a.more'));

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
    if (adopted && pagesShown === 0) {
      cards = [...grid.children];
      const now = Date.now();
      uploads.forEach((u, i) => {
        const li = cards[i];
        if (!li) return;
        cardWorks(li, u);
        // The server's "3 minutes ago" may be older than the page: its text brought up to date, the node kept.
        const time = li.querySelector('time[datetime]');
        const text = time && ago(time.getAttribute('datetime') ?? '', now);
        if (time && text !== time.textContent) time.textContent = text;
      });
    } else {
      cards = uploads.map((u, i) => card(u, eager && i < limits.eagerThumbnails));
      grid.append(...cards);
    }
    if (pagesShown > 0) history.replaceState(null, '', feedUrl({ sort, tag, user, ai, cursor }));
    if (focusFirst && cards[0]) cards[0].querySelector('a')?.focus();
    pagesShown += 1;
    if (next_cursor) at = { cursor: next_cursor };
    more.href = feedUrl({ sort, tag, user, ai, cursor: next_cursor });
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
        : await api('GET', `/api/uploads?${feedQuery(sort, tag, user, ai, asked)}`);
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
