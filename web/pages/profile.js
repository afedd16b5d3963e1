// The visitor's profile (`/profile`): their counts, their uploads (twelve, then more a page at a time by cursor)
// and API tokens.
import { api, explain } from '../lib/api.js';
import { card } from '../lib/cards.js';
import { h, ME, plural, setTitle, show, signinLink } from '../lib/dom.js';
import { limits } from '../lib/limits.js';
import { tokenSection } from './tokens.js';
/** @import { Upload } from '../lib/cards.js' */
/**
 * @typedef {{
 *   user: { username: string },
 *   stats: { uploads: number, upvotes_received: number, downvotes_received: number, votes_cast: number },
 *   uploads: Upload[],
 *   next_cursor: string | null,
 * }} ProfileData
 */

export async function render() {
  setTitle('Your profile');
  if (!ME) {
    show(h('h1', {}, 'Profile'), h('p', {}, signinLink('Sign in'), ' to see your uploads and API tokens.'));
    return;
  }
  const [profile, tokens] = await Promise.all([api('GET', '/api/profile'), api('GET', '/api/auth/tokens')]);
  if (!profile.ok) {
    show(h('h1', {}, 'Profile'), h('p', { class: 'alert error' }, explain(profile)));
    return;
  }
  const { user, stats, uploads, next_cursor } = /** @type {ProfileData} */ (profile.data);
  const grid = h(
    'ol',
    { class: 'grid', 'aria-label': 'Your uploads' },
    uploads.map((u, i) => card(u, i < limits.eagerThumbnails)),
  );
  const status = h('p', { class: 'status', role: 'status' });
  const more = h('button', { type: 'button', class: 'more', hidden: !next_cursor }, 'More of your uploads');
  let cursor = next_cursor;
  more.addEventListener('click', async () => {
    if (!cursor) return;
    more.disabled = true;
    status.textContent = 'Loading…';
    const r = await api('GET', `/api/profile/uploads?${new URLSearchParams({ cursor })}`);
    more.disabled = false;
    if (!r.ok) {
      status.textContent = explain(r);
      return;
    }
    const page = /** @type {{ uploads: Upload[], next_cursor: string | null }} */ (r.data);
    const cards = page.uploads.map((u) => card(u, false));
    grid.append(...cards);
    cards[0]?.querySelector('a')?.focus();
    cursor = page.next_cursor;
    more.hidden = !cursor;
    status.textContent = '';
  });
  show(
    h('h1', {}, user.username),
    h(
      'p',
      { class: 'meta' },
      `${plural(stats.uploads, 'upload', 'uploads')} · ${plural(stats.upvotes_received, 'upvote', 'upvotes')} and ` +
        `${plural(stats.downvotes_received, 'downvote', 'downvotes')} received · ` +
        `${plural(stats.votes_cast, 'vote', 'votes')} cast`,
    ),
    h('h2', {}, 'Your uploads'),
    uploads.length ? grid : h('p', {}, 'No uploads yet. ', h('a', { href: '/new' }, 'Upload something')),
    status,
    more,
    tokenSection(tokens.ok ? tokens.data.tokens : []),
  );
}
