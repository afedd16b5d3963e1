// The visitor's profile (`/profile`): their counts, latest uploads and API tokens.
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
  const { user, stats, uploads } = /** @type {ProfileData} */ (profile.data);
  const grid = h(
    'ol',
    { class: 'grid', 'aria-label': 'Your uploads' },
    uploads.map((u, i) => card(u, i < limits.eagerThumbnails)),
  );
  show(
    h('h1', {}, user.username),
    h(
      'p',
      { class: 'meta' },
      `${plural(stats.uploads, 'upload', 'uploads')} · ${stats.upvotes_received} upvotes and ` +
        `${stats.downvotes_received} downvotes received · ${plural(stats.votes_cast, 'vote', 'votes')} cast`,
    ),
    h('h2', {}, 'Your latest uploads'),
    uploads.length ? grid : h('p', {}, 'No uploads yet. ', h('a', { href: '/new' }, 'Upload something')),
    tokenSection(tokens.ok ? tokens.data.tokens : []),
  );
}
