// Uploads as the feed, the profile and the moderation queue show them: a card with its thumbnail (or link card).
import { thumbHashToDataURL } from 'thumbhash';
import { age, h, hostOf, ME, say } from './dom.js';
import { bindVotes } from './votes.js';

/**
 * An upload as the API shows it (API.md, "Upload"): only the fields the pages read are named.
 * @typedef {{ name: string, slug: string }} Tag
 * @typedef {{
 *   id: string, user_id: string, username: string, upload_type: 'image' | 'link', description: string | null,
 *   original_name: string | null, external_url: string | null, is_private: boolean, moderation?: string | null,
 *   upvotes: number, downvote_count: number, my_vote?: string | null, created_at: string, tags?: Tag[],
 *   image: { url: string, thumbnail_url: string, width: number, height: number, thumbhash: string | null } | null,
 *   embed?: { provider: string | null, embed_url: string | null } | null,
 * }} Upload
 */

/**
 * The ThumbHash placeholder as the image's background until its bytes arrive. Decoded after the images are in
 * the document (their requests go first), and only for those still loading.
 * @param {HTMLImageElement} img
 * @param {string | null | undefined} hash
 */
export function placeholder(img, hash) {
  if (!hash) return;
  setTimeout(() => paintPlaceholder(img, hash), 0);
}
/**
 * @param {HTMLImageElement} img
 * @param {string} hash
 */
function paintPlaceholder(img, hash) {
  if (img.complete && img.naturalWidth > 0) return;
  try {
    const bytes = Uint8Array.from(atob(hash), (c) => c.charCodeAt(0));
    img.style.backgroundImage = `url("${thumbHashToDataURL(bytes)}")`;
    img.addEventListener('load', () => img.style.removeProperty('background-image'), { once: true });
  } catch {
    // A malformed hash only costs the placeholder.
  }
}

/**
 * @param {number} width
 * @param {number} height
 * @param {number} max
 */
export function fit(width, height, max) {
  const scale = Math.min(1, max / Math.max(width, height, 1));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/**
 * The counts: for a signed-in visitor, vote buttons showing their vote (`my_vote`, when the listing has it),
 * named by their content ("Upvote <title>, upvotes: 3": no aria-label, so the visible count is in the name);
 * for others, the counts as text.
 * @param {Upload} u
 */
function counts(u) {
  if (ME) {
    const title = titleOf(u);
    return [
      h(
        'button',
        {
          type: 'button',
          class: 'vote fucks',
          'aria-pressed': String(u.my_vote === 'fucks'),
        },
        h('span', { class: 'sr' }, `Upvote ${title}, upvotes: `),
        h('span', { 'aria-hidden': 'true' }, '▲ '),
        h('span', { class: 'n-up' }, u.upvotes),
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'vote does_not_fuck',
          'aria-pressed': String(u.my_vote === 'does_not_fuck'),
        },
        h('span', { class: 'sr' }, `Downvote ${title}, downvotes: `),
        h('span', { 'aria-hidden': 'true' }, '▼ '),
        h('span', { class: 'n-down' }, u.downvote_count),
      ),
    ];
  }
  return [
    h(
      'span',
      { class: 'up', title: 'upvotes' },
      '▲ ',
      h('span', { class: 'sr' }, 'upvotes: '),
      h('span', { class: 'n-up' }, u.upvotes),
    ),
    h(
      'span',
      { class: 'down', title: 'downvotes' },
      '▼ ',
      h('span', { class: 'sr' }, 'downvotes: '),
      h('span', { class: 'n-down' }, u.downvote_count),
    ),
  ];
}

/**
 * A card's vote buttons made to work (the card built here or the server's): a failure shows in the card.
 * @param {Element} li
 * @param {string} uploadId
 */
export function cardVotes(li, uploadId) {
  const up = li.querySelector('button.vote.fucks');
  const down = li.querySelector('button.vote.does_not_fuck');
  if (!up || !down) return;
  bindVotes(uploadId, {
    up,
    down,
    nUp: up.querySelector('.n-up'),
    nDown: down.querySelector('.n-down'),
    onError: (text) => {
      let box = li.querySelector('.alert');
      if (!(box instanceof HTMLElement)) {
        box = h('p', { class: 'alert', role: 'alert' });
        li.append(box);
      }
      say(/** @type {HTMLElement} */ (box), text);
    },
  });
}

/**
 * A user's page (`/u/{username}`): their public uploads.
 * @param {string} username
 */
export function userPath(username) {
  return `/u/${encodeURIComponent(username)}`;
}

/** @param {Tag[] | null | undefined} tags */
export function tagList(tags) {
  if (!tags?.length) return null;
  return h(
    'ul',
    { class: 'tags', 'aria-label': 'Tags' },
    tags.map((t) => h('li', {}, h('a', { href: `/?tag=${encodeURIComponent(t.slug)}` }, t.name))),
  );
}

/** @param {Upload} u */
export function titleOf(u) {
  const d = u.description?.trim();
  if (d) return d.length > 90 ? `${d.slice(0, 89)}…` : d;
  if (u.upload_type === 'link') return hostOf(u.external_url) || 'Link';
  return u.original_name || 'Untitled image';
}

/**
 * A feed or profile card: thumbnail (or link card), title, counts, tags.
 * @param {Upload} u
 * @param {boolean} eager
 */
export function card(u, eager) {
  let media;
  if (u.upload_type === 'image' && u.image) {
    const size = fit(u.image.width, u.image.height, 320);
    media = h('img', {
      src: u.image.thumbnail_url,
      alt: u.description || u.original_name || 'Image',
      width: size.width,
      height: size.height,
      loading: eager ? 'eager' : 'lazy',
      fetchpriority: eager ? 'high' : null,
      decoding: eager ? 'sync' : 'async',
    });
    placeholder(media, u.image.thumbhash);
  } else {
    media = h(
      'span',
      { class: 'linkcard' },
      h('span', { class: 'provider' }, u.embed?.provider ?? 'link'),
      h('span', { class: 'host' }, hostOf(u.external_url)),
    );
  }
  const li = h(
    'li',
    { class: 'card' },
    h(
      'a',
      { class: 'cardlink', href: `/uploads/${encodeURIComponent(u.id)}` },
      media,
      h('span', { class: 'title' }, titleOf(u)),
    ),
    h(
      'p',
      { class: 'meta' },
      counts(u),
      u.is_private ? h('span', { class: 'badge' }, 'Private') : null,
      u.moderation && u.moderation !== 'visible' ? h('span', { class: 'badge warn' }, u.moderation) : null,
      h('span', { class: 'by' }, 'by ', h('a', { href: userPath(u.username) }, u.username)),
      age(u.created_at),
    ),
    tagList(u.tags),
  );
  cardVotes(li, u.id);
  return li;
}
