/**
 * An upload's page as the server renders it (issue 30, "Shared links unfurl"): the read-only content of
 * `/uploads/{id}` (image or link, description, uploader, time, counts, tags linked to their feed) so the page
 * reads and navigates with JavaScript off, and its head's metadata for link previews: Open Graph, Twitter card,
 * a canonical link and oEmbed discovery. web/pages/upload.js renders the page again, with its controls, when it
 * runs.
 *
 * Only a public upload that is visible (not private, held or removed) carries metadata: a private upload is
 * reachable by its id (private means unlisted) but is not described to anyone who unfurls its link, and is
 * `noindex`. Every string from an upload goes through `escapeHtml`. Absolute URLs start from the request's own
 * origin (request-origin.ts).
 */
import type { UploadView } from '../domain/uploads/upload.types.ts';
import { el, text, toHtml, userPath } from './web-render.ts';
import { provenanceLabels } from './views/card-view.ts';

/** The image variants (images.routes.ts): the long side at most this many pixels, never enlarged. */
export const VARIANTS: ReadonlyArray<readonly ['thumb' | 'medium' | 'full', number]> = [
  ['thumb', 320],
  ['medium', 1024],
  ['full', 2048],
];

/** `width`×`height` scaled (never enlarged) to fit in `maxWidth`×`maxHeight`. */
export function fitBox(width: number, height: number, maxWidth: number, maxHeight: number) {
  const scale = Math.min(1, maxWidth / Math.max(width, 1), maxHeight / Math.max(height, 1));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}
/** A variant's size: the long side at most `max`. */
const variantSize = (image: { width: number; height: number }, max: number) =>
  fitBox(image.width, image.height, max, max);

function hostOf(url: string | null | undefined): string {
  try {
    return new URL(String(url)).host;
  } catch {
    return '';
  }
}
/** An http(s) URL as a link target, or null (web/lib/dom.js's `safeUrl`). */
function safeUrl(url: string | null | undefined): string | null {
  try {
    const u = new URL(String(url));
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null;
  } catch {
    return null;
  }
}

/** One line, at most `max` characters (an ellipsis ends a cut one). */
function clip(value: string, max: number): string {
  const line = value.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line;
}

/** Whether the upload may be described to anyone who unfurls its link: public and visible. */
export function unfurlable(u: UploadView): boolean {
  return !u.is_private && u.moderation === 'visible';
}

/** The upload's title for previews and the page's `<title>`: its description, trimmed, or who uploaded it. */
export function uploadTitle(u: UploadView): string {
  return (u.description && clip(u.description, 70)) || `Upload by ${u.username}`;
}

/** The preview's description: the description, and for a link where it goes. */
function summary(u: UploadView): string {
  const about = u.description ? clip(u.description, 200) : '';
  if (u.upload_type === 'link') {
    const where = `${u.embed?.provider ? `${u.embed.provider} ` : ''}link to ${hostOf(u.external_url) || 'the web'}`;
    const line = `A ${where} shared by ${u.username} on pixvote: ${u.external_url ?? ''}`;
    return about ? `${about} · ${line}` : line;
  }
  return about || `An image shared by ${u.username} on pixvote.`;
}

/** Absolute URLs of an upload on this origin. */
export const pageUrl = (origin: string, id: string) => `${origin}/uploads/${encodeURIComponent(id)}`;
const imageUrl = (origin: string, id: string, size: string) =>
  `${origin}/api/image/${encodeURIComponent(id)}?size=${size}`;
export const oembedHref = (origin: string, id: string) =>
  `/api/oembed?${new URLSearchParams({ url: pageUrl(origin, id), format: 'json' }).toString()}`;

const meta = (property: string, content: string | number) => el('meta', { property, content });
const named = (name: string, content: string | number) => el('meta', { name, content });

/** What the page's head carries: `<title>` text and the markup after it. */
export interface PageHead {
  title: string;
  head: string;
}

/** The upload page's head: metadata for previews when the upload may be described, else `noindex` only. */
export function uploadHead(u: UploadView, origin: string): PageHead {
  if (!unfurlable(u)) return { title: 'Upload · pixvote', head: `${named('robots', 'noindex')}\n` };
  const title = uploadTitle(u);
  const description = summary(u);
  const url = pageUrl(origin, u.id);
  const tags = [
    el('link', { rel: 'canonical', href: url }),
    named('description', description),
    meta('og:site_name', 'pixvote'),
    meta('og:type', 'article'),
    meta('og:title', title),
    meta('og:description', description),
    meta('og:url', url),
    meta('article:published_time', u.created_at),
    ...(u.tags ?? []).map((t) => meta('article:tag', t.name)),
  ];
  if (u.upload_type === 'image' && u.image) {
    const size = variantSize(u.image, 1024);
    const alt = u.description ? clip(u.description, 420) : `An image by ${u.username}`;
    tags.push(
      meta('og:image', imageUrl(origin, u.id, 'medium')),
      meta('og:image:type', 'image/webp'),
      meta('og:image:width', size.width),
      meta('og:image:height', size.height),
      meta('og:image:alt', alt),
      named('twitter:card', 'summary_large_image'),
      named('twitter:image', imageUrl(origin, u.id, 'medium')),
      named('twitter:image:alt', alt),
    );
  } else {
    tags.push(named('twitter:card', 'summary'));
  }
  tags.push(
    named('twitter:title', title),
    named('twitter:description', description),
    el('link', { rel: 'alternate', type: 'application/json+oembed', href: oembedHref(origin, u.id), title }),
  );
  return { title: `${title} · pixvote`, head: tags.map((t) => `${t}\n`).join('') };
}

/** The time as a `<time>` (UTC: the server does not know the reader's zone; upload.js shows it in theirs). */
function time(iso: string): string {
  const d = new Date(iso);
  const shown = Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return el('time', { datetime: iso }, text(shown));
}

/** The image that makes the upload page's largest paint (its medium variant), for the page to preload; or null. */
export function uploadPageImage(u: UploadView): string | null {
  return u.upload_type === 'image' && u.image ? `${u.image.url}?size=medium` : null;
}

/**
 * The content of `<main>` for an upload: what web/pages/upload.js shows, read-only (no vote buttons, owner
 * tools or report form: those need the script). `signedIn`: whether to offer the sign-in link for voting.
 */
export function uploadMainHtml(u: UploadView, signedIn: boolean): string {
  let media: string;
  const src = uploadPageImage(u);
  if (src && u.image) {
    const size = variantSize(u.image, 1024);
    const full = el('a', { href: `${u.image.url}?size=full` }, 'Open the full-size image');
    media = el(
      'figure',
      { class: 'media' },
      el('img', {
        src,
        alt: u.description || u.original_name || 'Image',
        width: size.width,
        height: size.height,
        fetchpriority: 'high',
      }),
      el('figcaption', {}, text(u.original_name ?? ''), ' ', full),
    );
  } else {
    const href = safeUrl(u.external_url);
    const target = u.external_url ?? '';
    media = el(
      'div',
      { class: 'media link' },
      el(
        'p',
        {},
        'Link: ',
        href ? el('a', { href, rel: 'noopener noreferrer nofollow ugc' }, text(target)) : text(target),
      ),
      el(
        'p',
        { class: 'linkcard' },
        el('span', { class: 'provider' }, text(u.embed?.provider ?? 'link')),
        ' ',
        el('span', { class: 'host' }, text(hostOf(u.external_url))),
      ),
    );
  }
  const tags = u.tags?.length
    ? el(
        'ul',
        { class: 'tags', 'aria-label': 'Tags' },
        ...u.tags.map((t) => el('li', {}, el('a', { href: `/?tag=${encodeURIComponent(t.slug)}` }, text(t.name)))),
      )
    : '';
  const here = `/uploads/${encodeURIComponent(u.id)}`;
  return el(
    'article',
    { class: 'upload' },
    media,
    el(
      'div',
      { class: 'about' },
      el('h1', {}, 'Upload by ', text(u.username)),
      u.description ? el('p', { class: 'description' }, text(u.description)) : '',
      el(
        'p',
        { class: 'meta' },
        time(u.created_at),
        u.is_private ? el('span', { class: 'badge' }, 'Private') : '',
        u.moderation && u.moderation !== 'visible' ? el('span', { class: 'badge warn' }, text(u.moderation)) : '',
        toHtml(provenanceLabels(u) ?? ''),
      ),
      el(
        'p',
        { class: 'counts' },
        '▲ ',
        el('span', { class: 'n-up' }, text(u.upvotes)),
        ' upvotes · ▼ ',
        el('span', { class: 'n-down' }, text(u.downvote_count)),
        ' downvotes',
      ),
      signedIn
        ? ''
        : el('p', { class: 'votes' }, el('a', { href: `/signin?next=${encodeURIComponent(here)}` }, 'Sign in to vote')),
      el('div', { class: 'tagbox' }, tags),
    ),
  );
}

/** The page of an upload that is not there: 404 (missing, or held for this visitor) or 410 (removed). */
export function missingUploadPage(status: 404 | 410): PageHead & { main: string } {
  const gone = status === 410;
  return {
    title: `${gone ? 'Removed' : 'Not found'} · pixvote`,
    head: `${named('robots', 'noindex')}\n`,
    main:
      el('h1', {}, gone ? 'This upload was removed' : 'Upload not found') +
      el('p', {}, gone ? 'The moderators removed this upload.' : 'There is no upload at this address.') +
      el('p', {}, el('a', { href: '/' }, 'Back to the feed')),
  };
}

/** oEmbed 1.0 (https://oembed.com): the answer for a public, visible upload. */
export interface OEmbed {
  version: '1.0';
  type: 'photo' | 'link';
  title: string;
  author_name: string;
  author_url?: string;
  provider_name: 'pixvote';
  provider_url: string;
  cache_age: number;
  url?: string;
  width?: number;
  height?: number;
  thumbnail_url?: string;
  thumbnail_width?: number;
  thumbnail_height?: number;
}

export const OEMBED_CACHE_AGE = 3600;

/**
 * An upload as oEmbed: `photo` with the largest variant that fits `maxWidth`×`maxHeight` (the thumbnail when
 * none does), its size scaled into that box; `link` for a link upload.
 */
export function oembedOf(
  u: UploadView,
  origin: string,
  box: { maxWidth?: number | undefined; maxHeight?: number | undefined } = {},
): OEmbed {
  const base = {
    version: '1.0' as const,
    title: uploadTitle(u),
    author_name: u.username,
    // The uploader's page: their public uploads.
    author_url: `${origin}${userPath(u.username)}`,
    provider_name: 'pixvote' as const,
    provider_url: `${origin}/`,
    cache_age: OEMBED_CACHE_AGE,
  };
  if (u.upload_type !== 'image' || !u.image) return { type: 'link', ...base };
  const image = u.image;
  const maxW = box.maxWidth ?? Infinity;
  const maxH = box.maxHeight ?? Infinity;
  const fitting = VARIANTS.filter(([, max]) => {
    const s = variantSize(image, max);
    return s.width <= maxW && s.height <= maxH;
  });
  const [name, max] = fitting.at(-1) ?? VARIANTS[0]!;
  const own = variantSize(image, max);
  const size = fitBox(own.width, own.height, maxW, maxH);
  const thumb = variantSize(image, 320);
  return {
    type: 'photo',
    ...base,
    url: imageUrl(origin, u.id, name),
    width: size.width,
    height: size.height,
    thumbnail_url: imageUrl(origin, u.id, 'thumb'),
    thumbnail_width: thumb.width,
    thumbnail_height: thumb.height,
  };
}
