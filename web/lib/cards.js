// Uploads as the feed, the profile and the moderation queue show them: a card with its thumbnail (or link card),
// built from its one view (src/gateway/views/card-view.ts, which the server renders too), then made to work.
import { thumbHashToDataURL } from 'thumbhash';
import { cardView, tagList as tagListView } from './card-view.js';
import { h, ME, say, toDom } from './dom.js';
import { bindVotes } from './votes.js';

export { fit, provenanceLabels, userPath } from './card-view.js';
/** @typedef {import('./card-view.js').Upload} Upload */

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
 * An upload's tags as links to their feeds, or null for none.
 * @param {import('./card-view.js').Tag[] | null | undefined} tags
 */
export function tagList(tags) {
  const view = tagListView(tags);
  return view && toDom(view);
}

/**
 * The card's thumbnail painted with its placeholder and its vote buttons made to work: for a card built here, or
 * for one the server wrote (web/pages/feed.js adopts those).
 * @param {Element} li
 * @param {Upload} u
 */
export function cardWorks(li, u) {
  const img = li.querySelector('img');
  if (img && u.upload_type === 'image' && u.image) placeholder(img, u.image.thumbhash);
  cardVotes(li, u.id);
}

/**
 * A feed or profile card: thumbnail (or link card), title, counts, tags.
 * @param {Upload} u
 * @param {boolean} eager
 */
export function card(u, eager) {
  const li = /** @type {HTMLLIElement} */ (toDom(cardView(u, eager, { signedIn: Boolean(ME), now: Date.now() })));
  cardWorks(li, u);
  return li;
}
