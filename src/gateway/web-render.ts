/**
 * The feed's first page rendered by the server (issue 30): the heading, the sort links and tag filter, and the
 * `<ol class="grid">` of cards, inside the shell's `<main>`, so that the first thumbnails paint without waiting for
 * any script. web/pages/feed.js adopts this markup (it builds it itself only when the document has none).
 *
 * A mirror of web/lib/cards.js's `card()` and web/pages/feed.js's `render()`: the same elements, attributes in the
 * same order, the same text, no whitespace between elements, so the browser's DOM of either is the same
 * (test/http/web-render.test.ts compares them). Every string from an upload goes through `escapeHtml`. No style
 * attribute (the pages' CSP has no 'unsafe-inline'): the ThumbHash placeholders are painted by feed.js, as
 * cards.js paints its own.
 */
import { MAX_TAG_LENGTH } from '../domain/tags.ts';
import { EAGER_THUMBNAILS } from './web-limits.ts';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** Text for HTML content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** An upload as the API shows it: the fields a card reads (web/lib/cards.js, `Upload`). */
export interface CardUpload {
  id: string;
  username: string;
  upload_type: 'image' | 'link';
  description: string | null;
  original_name: string | null;
  external_url: string | null;
  is_private: boolean;
  moderation?: string | null;
  upvotes: number;
  downvote_count: number;
  my_vote?: string | null;
  created_at: string;
  tags?: Array<{ name: string; slug: string }>;
  image: { thumbnail_url: string; width: number; height: number; thumbhash: string | null } | null;
  embed?: { provider: string | null } | null;
}

export type Attrs = Record<string, string | number | boolean | null | undefined>;

/** The elements that have no end tag (of those the pages use). */
const VOID = new Set(['img', 'input', 'meta', 'link']);

/**
 * An element as markup, as web/lib/dom.js's `h()` builds it: attributes in order (null, undefined and false left
 * out, values escaped), children as given (already markup).
 */
export function el(tag: string, attrs: Attrs, ...children: string[]): string {
  let open = `<${tag}`;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    open += v === true ? ` ${k}` : ` ${k}="${escapeHtml(String(v))}"`;
  }
  return VOID.has(tag) ? `${open}>` : `${open}>${children.join('')}</${tag}>`;
}
/** Text content, escaped. */
export const text = (value: string | number) => escapeHtml(String(value));

/** web/lib/dom.js's `hostOf`. */
function hostOf(url: string | null | undefined): string {
  try {
    return new URL(String(url)).host;
  } catch {
    return '';
  }
}

/** web/lib/cards.js's `fit`. */
function fit(width: number, height: number, max: number) {
  const scale = Math.min(1, max / Math.max(width, height, 1));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** web/lib/cards.js's `titleOf`. */
function titleOf(u: CardUpload): string {
  const d = u.description?.trim();
  if (d) return d.length > 90 ? `${d.slice(0, 89)}…` : d;
  if (u.upload_type === 'link') return hostOf(u.external_url) || 'Link';
  return u.original_name || 'Untitled image';
}

/** web/lib/dom.js's `plural`. */
function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** web/lib/dom.js's `ago`: how long ago, by whole minutes. */
export function ago(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const minutes = Math.floor((now - t) / 60_000);
  if (minutes < 1) return 'just now';
  if (minutes < 60) return `${plural(minutes, 'minute', 'minutes')} ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${plural(hours, 'hour', 'hours')} ago`;
  const days = Math.floor(hours / 24);
  if (days < 30) return `${plural(days, 'day', 'days')} ago`;
  if (days < 365) return `${plural(Math.floor(days / 30), 'month', 'months')} ago`;
  return `${plural(Math.floor(days / 365), 'year', 'years')} ago`;
}

/** web/lib/dom.js's `utcDate`. */
export function utcDate(iso: string): string | null {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A user's page (`/u/{username}`): their public uploads. */
export const userPath = (username: string) => `/u/${encodeURIComponent(username)}`;

function tagList(tags: CardUpload['tags']): string {
  if (!tags?.length) return '';
  const items = tags.map((t) => el('li', {}, el('a', { href: `/?tag=${encodeURIComponent(t.slug)}` }, text(t.name))));
  return el('ul', { class: 'tags', 'aria-label': 'Tags' }, ...items);
}

/** Who the card is for (web/lib/dom.js's `ME`) and the time its age is told from. */
export interface CardContext {
  signedIn: boolean;
  now: number;
}

/** web/lib/cards.js's `counts`: vote buttons for a signed-in visitor, the counts as text for others. */
function counts(u: CardUpload, signedIn: boolean): string {
  if (signedIn) {
    const title = titleOf(u);
    return (
      el(
        'button',
        {
          type: 'button',
          class: 'vote fucks',
          'aria-pressed': String(u.my_vote === 'fucks'),
        },
        el('span', { class: 'sr' }, text(`Upvote ${title}, upvotes: `)),
        el('span', { 'aria-hidden': 'true' }, '▲ '),
        el('span', { class: 'n-up' }, text(u.upvotes)),
      ) +
      el(
        'button',
        {
          type: 'button',
          class: 'vote does_not_fuck',
          'aria-pressed': String(u.my_vote === 'does_not_fuck'),
        },
        el('span', { class: 'sr' }, text(`Downvote ${title}, downvotes: `)),
        el('span', { 'aria-hidden': 'true' }, '▼ '),
        el('span', { class: 'n-down' }, text(u.downvote_count)),
      )
    );
  }
  return (
    el(
      'span',
      { class: 'up', title: 'upvotes' },
      '▲ ',
      el('span', { class: 'sr' }, 'upvotes: '),
      el('span', { class: 'n-up' }, text(u.upvotes)),
    ) +
    el(
      'span',
      { class: 'down', title: 'downvotes' },
      '▼ ',
      el('span', { class: 'sr' }, 'downvotes: '),
      el('span', { class: 'n-down' }, text(u.downvote_count)),
    )
  );
}

/** web/lib/cards.js's `card()`, as markup. */
export function cardHtml(u: CardUpload, eager: boolean, { signedIn, now }: CardContext): string {
  let media;
  if (u.upload_type === 'image' && u.image) {
    const size = fit(u.image.width, u.image.height, 320);
    media = el('img', {
      src: u.image.thumbnail_url,
      alt: u.description || u.original_name || 'Image',
      width: size.width,
      height: size.height,
      loading: eager ? 'eager' : 'lazy',
      fetchpriority: eager ? 'high' : null,
      decoding: eager ? 'sync' : 'async',
    });
  } else {
    media = el(
      'span',
      { class: 'linkcard' },
      el('span', { class: 'provider' }, text(u.embed?.provider ?? 'link')),
      el('span', { class: 'host' }, text(hostOf(u.external_url))),
    );
  }
  return el(
    'li',
    { class: 'card' },
    el(
      'a',
      { class: 'cardlink', href: `/uploads/${encodeURIComponent(u.id)}` },
      media,
      el('span', { class: 'title' }, text(titleOf(u))),
    ),
    el(
      'p',
      { class: 'meta' },
      counts(u, signedIn),
      u.is_private ? el('span', { class: 'badge' }, 'Private') : '',
      u.moderation && u.moderation !== 'visible' ? el('span', { class: 'badge warn' }, text(u.moderation)) : '',
      el('span', { class: 'by' }, 'by ', el('a', { href: userPath(u.username) }, text(u.username))),
      el('time', { datetime: u.created_at, title: utcDate(u.created_at) }, text(ago(u.created_at, now))),
    ),
    tagList(u.tags),
  );
}

/** web/pages/feed.js's sorts. */
const SORTS: ReadonlyArray<readonly [string, string]> = [
  ['new', 'New'],
  ['top', 'Top'],
  ['hot', 'Hot'],
  ['best', 'Best'],
];

/** web/pages/feed.js's `feedUrl`: a page by its cursor, or by number; of a user's uploads when `user` is set. */
function feedUrl({
  sort,
  tag,
  user,
  page,
  cursor,
}: {
  sort?: string;
  tag?: string;
  user?: string;
  page?: number;
  cursor?: string | null;
}): string {
  const q = new URLSearchParams();
  if (sort && sort !== 'new') q.set('sort', sort);
  if (tag) q.set('tag', tag);
  if (cursor) q.set('cursor', cursor);
  else if (page && page > 1) q.set('page', String(page));
  const s = q.toString();
  const path = user ? userPath(user) : '/';
  return s ? `${path}?${s}` : path;
}

/** web/pages/feed.js's `heading`. */
function feedHeading(tag: string, user: string): string {
  if (user) return `Uploads by ${user}${tag ? ` tagged “${tag}”` : ''}`;
  return tag ? `Uploads tagged “${tag}”` : 'Latest uploads';
}

/** web/pages/feed.js's `emptyText`: what an empty feed says. */
function emptyText(tag: string, user: string): string {
  if (tag) return 'No uploads with this tag yet.';
  return user ? 'No public uploads yet.' : 'Nothing here yet: be the first to upload.';
}

export interface FeedView {
  sort: string;
  /** The tag as its slug ('' for none). */
  tag: string;
  /** Whose uploads (`/u/{username}`; '' for everyone's). */
  user: string;
  /** The feed page shown by number (1 for the first), when it was not reached by cursor. */
  page: number;
  /** The cursor the page was reached by, if it was. */
  cursor: string | null;
  uploads: CardUpload[];
  hasMore: boolean;
  nextCursor: string | null;
  /** Whether a visitor is signed in (their cards have vote buttons). */
  signedIn: boolean;
  /** The time the cards' ages are told from (ms). */
  now: number;
}

/** The way back from a page after the first: to the newest (reached by cursor) or the page before (by number). */
export function newerLink({
  sort,
  tag,
  user,
  page,
  cursor,
}: Pick<FeedView, 'sort' | 'tag' | 'user' | 'page' | 'cursor'>) {
  if (cursor) return { href: feedUrl({ sort, tag, user }), label: '← Newest uploads' };
  return page > 1 ? { href: feedUrl({ sort, tag, user, page: page - 1 }), label: '← Newer page' } : null;
}

/** What web/pages/feed.js's `render()` shows once its first page has loaded, as the content of `<main>`. */
export function feedHtml(view: FeedView): string {
  const { sort, tag, user, page, cursor, uploads, hasMore, nextCursor } = view;
  const context = { signedIn: view.signedIn, now: view.now };
  const newer = newerLink({ sort, tag, user, page, cursor });
  const sorts = SORTS.map(([s, label]) =>
    el('a', { href: feedUrl({ sort: s, tag, user }), 'aria-current': s === sort ? 'page' : null }, label),
  );
  const filter = el(
    'form',
    { class: 'tagfilter', role: 'search', action: feedUrl({ user }), method: 'get' },
    el('label', { for: 'tag-filter' }, 'Tag'),
    el('input', { id: 'tag-filter', name: 'tag', value: tag, maxlength: MAX_TAG_LENGTH, autocomplete: 'off' }),
    sort !== 'new' ? el('input', { type: 'hidden', name: 'sort', value: sort }) : '',
    el('button', { type: 'submit' }, 'Filter'),
    tag ? el('a', { href: feedUrl({ sort, user }) }, 'All tags') : '',
  );
  const status = uploads.length ? '' : emptyText(tag, user);
  return [
    el('h1', {}, text(feedHeading(tag, user))),
    el('div', { class: 'controls' }, el('nav', { class: 'sorts', 'aria-label': 'Sort' }, ...sorts), filter),
    newer ? el('p', {}, el('a', { href: newer.href }, newer.label)) : '',
    el(
      'ol',
      { class: 'grid', 'aria-label': 'Uploads' },
      ...uploads.map((u, i) => cardHtml(u, i < EAGER_THUMBNAILS, context)),
    ),
    el('p', { class: 'status', role: 'status' }, status),
    el(
      'a',
      { class: 'more button', href: feedUrl({ sort, tag, user, cursor: nextCursor }), hidden: !hasMore },
      'More uploads',
    ),
  ].join('');
}
