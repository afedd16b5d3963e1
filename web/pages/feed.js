// The feed (`/`): uploads by sort and tag, a page at a time, the next loaded on scrolling near the end.
import { api, explain } from '../lib/api.js';
import { card } from '../lib/cards.js';
import { h, show } from '../lib/dom.js';
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

/** @param {{ sort?: string, tag?: string, page?: number }} where */
function feedUrl({ sort, tag, page }) {
  const q = new URLSearchParams();
  if (sort && sort !== 'new') q.set('sort', sort);
  if (tag) q.set('tag', tag);
  if (page && page > 1) q.set('page', String(page));
  const s = q.toString();
  return s ? `/?${s}` : '/';
}

export async function render() {
  const params = new URLSearchParams(location.search);
  const asked = params.get('sort');
  const sort = asked !== null && SORTS.some(([s]) => s === asked) ? asked : 'new';
  const tag = slugify(params.get('tag') ?? '');
  const first = Math.max(1, Number.parseInt(params.get('page') ?? '1', 10) || 1);

  const grid = h('ol', { class: 'grid', 'aria-label': 'Uploads' });
  const status = h('p', { class: 'status', role: 'status' });
  const more = h(
    'a',
    { class: 'more button', href: feedUrl({ sort, tag, page: first + 1 }), hidden: true },
    'More uploads',
  );
  show(
    h('h1', {}, tag ? `Uploads tagged “${tag}”` : 'Latest uploads'),
    h(
      'div',
      { class: 'controls' },
      h(
        'nav',
        { class: 'sorts', 'aria-label': 'Sort' },
        SORTS.map(([s, label]) =>
          h('a', { href: feedUrl({ sort: s, tag }), 'aria-current': s === sort ? 'page' : null }, label),
        ),
      ),
      h(
        'form',
        { class: 'tagfilter', role: 'search', action: '/', method: 'get' },
        h('label', { for: 'tag-filter' }, 'Tag'),
        h('input', { id: 'tag-filter', name: 'tag', value: tag, maxlength: limits.maxTagLength, autocomplete: 'off' }),
        sort !== 'new' ? h('input', { type: 'hidden', name: 'sort', value: sort }) : null,
        h('button', { type: 'submit' }, 'Filter'),
        tag ? h('a', { href: feedUrl({ sort }) }, 'All tags') : null,
      ),
    ),
    first > 1 ? h('p', {}, h('a', { href: feedUrl({ sort, tag, page: first - 1 }) }, '← Newer page')) : null,
    grid,
    status,
    more,
  );

  let next = first;
  let loading = false;
  /** @param {boolean} focusFirst */
  async function load(focusFirst) {
    if (loading) return;
    loading = true;
    status.textContent = 'Loading…';
    const q = new URLSearchParams({ page: String(next), limit: String(limits.feedPageSize), sort });
    if (tag) q.set('tag', tag);
    // The first page may come with the document: the same bytes GET /api/uploads answers for this query.
    const embedded = document.getElementById('first-page');
    const r =
      next === first && embedded?.dataset.query === q.toString()
        ? { ok: true, status: 200, data: /** @type {unknown} */ (JSON.parse(embedded.textContent ?? '')) }
        : await api('GET', `/api/uploads?${q}`);
    loading = false;
    if (!r.ok) {
      status.textContent = explain(r);
      return;
    }
    const { uploads, has_more } = /** @type {{ uploads: Upload[], has_more: boolean }} */ (r.data);
    const eager = next === first;
    const cards = uploads.map((u, i) => card(u, eager && i < limits.eagerThumbnails));
    grid.append(...cards);
    if (next > first) history.replaceState(null, '', feedUrl({ sort, tag, page: next }));
    if (focusFirst && cards[0]) cards[0].querySelector('a')?.focus();
    next += 1;
    more.href = feedUrl({ sort, tag, page: next });
    more.hidden = !has_more;
    status.textContent =
      grid.children.length === 0
        ? tag
          ? 'No uploads with this tag yet.'
          : 'Nothing here yet: be the first to upload.'
        : '';
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
