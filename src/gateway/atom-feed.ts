/**
 * `GET /feed.atom` (issue 30): a listing's first page as an Atom 1.0 feed (RFC 4287), for feed readers.
 *
 * Built from the very page `GET /api/uploads` answers for the same filters (the cached JSON page: public uploads
 * only), so the feed can never show what the listing would not. Every piece of user text is XML-escaped, and the
 * characters XML 1.0 forbids (most C0 controls, lone surrogates, U+FFFE/U+FFFF) are dropped, along with the C1
 * controls it discourages: whatever a description holds, the document parses.
 */
import { createHash } from 'node:crypto';
import type { FeedSort } from '../domain/feeds/feed.service.ts';
import type { UploadView } from '../domain/uploads/upload.types.ts';

/** The listing a feed follows: the filters of `GET /api/uploads` but the page. */
export interface AtomListing {
  sort: FeedSort;
  tag?: string | undefined;
  user?: string | undefined;
  type?: 'image' | 'link' | undefined;
  ai?: 'only' | 'exclude' | undefined;
}

/** Everything XML 1.0 allows in a document (its `Char` production) minus DEL and the C1 controls. */
const NOT_XML_TEXT = /[^\t\n\r\u0020-\u007e\u00a0-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;
const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Text for XML content or a quoted attribute value: forbidden characters dropped, markup characters escaped. */
export function escapeXml(text: string): string {
  return text.replace(NOT_XML_TEXT, '').replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!);
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

const TITLE_LENGTH = 100;

/** An entry's title: the description on one line (shortened), or who uploaded it when there is none. */
function entryTitle(u: UploadView): string {
  const line = u.description.replace(NOT_XML_TEXT, '').replace(/\s+/g, ' ').trim();
  if (!line) return `Upload by ${u.username}`;
  const chars = [...line];
  return chars.length > TITLE_LENGTH ? `${chars.slice(0, TITLE_LENGTH - 1).join('')}…` : line;
}

/** The feed's title, naming its listing: "pixvote — top uploads tagged cats". */
export function feedTitle(l: AtomListing): string {
  const what = l.type === 'image' ? 'images' : l.type === 'link' ? 'links' : 'uploads';
  const ai = l.ai === 'only' ? ' made with AI' : l.ai === 'exclude' ? ' without AI' : '';
  return `pixvote — ${l.sort} ${what}${ai}${l.tag ? ` tagged ${l.tag}` : ''}${l.user ? ` by ${l.user}` : ''}`;
}

/** The listing's query string in one order (the feed's id, the page's alternate link). */
export function listingQuery(
  l: AtomListing,
  keys: ReadonlyArray<keyof AtomListing> = ['sort', 'tag', 'user', 'type', 'ai'],
) {
  const params = new URLSearchParams();
  for (const key of keys) if (l[key]) params.set(key, l[key]);
  return params.toString();
}

export interface AtomFeed {
  xml: string;
  /** Weak validator of the bytes. */
  etag: string;
  /** The newest entry's time (whole seconds, as `Last-Modified` carries it); null for an empty feed. */
  lastModified: Date | null;
}

/**
 * The feed document. `origin`: scheme and host of absolute URLs; `self`: the URL it was asked for; `now`: its
 * `updated` when it has no entries.
 */
export function renderAtom(opts: {
  origin: string;
  self: string;
  listing: AtomListing;
  uploads: readonly UploadView[];
  now: Date;
}): AtomFeed {
  const { origin, listing, uploads } = opts;
  const x = escapeXml;
  const newest = uploads.reduce<number | null>((max, u) => Math.max(max ?? 0, Date.parse(u.created_at)), null);
  const lastModified = newest === null ? null : new Date(Math.floor(newest / 1000) * 1000);
  const page = `${origin}/?${listingQuery(listing, ['sort', 'tag', 'ai'])}`;
  const entries = uploads.map((u) => {
    const url = `${origin}/uploads/${u.id}`;
    const image = `${origin}/api/image/${u.id}?size=medium`;
    const html = [
      ...(u.upload_type === 'image' && u.image
        ? [`<p><img src="${escapeHtml(image)}" alt="${escapeHtml(entryTitle(u))}"></p>`]
        : []),
      ...(u.external_url ? [`<p><a href="${escapeHtml(u.external_url)}">${escapeHtml(u.external_url)}</a></p>`] : []),
      ...(u.description ? [`<p>${escapeHtml(u.description)}</p>`] : []),
    ].join('');
    return [
      '<entry>',
      `<id>${x(url)}</id>`,
      `<title type="text">${x(entryTitle(u))}</title>`,
      `<link rel="alternate" type="text/html" href="${x(url)}"/>`,
      ...(u.upload_type === 'image' && u.image ? [`<link rel="enclosure" type="image/webp" href="${x(image)}"/>`] : []),
      ...(u.external_url ? [`<link rel="related" href="${x(u.external_url)}"/>`] : []),
      `<published>${u.created_at}</published>`,
      `<updated>${u.created_at}</updated>`,
      `<author><name>${x(u.username)}</name></author>`,
      ...u.tags.map((t) => `<category term="${x(t.slug)}" label="${x(t.name)}"/>`),
      ...(u.description ? [`<summary type="text">${x(u.description)}</summary>`] : []),
      `<content type="html">${x(html)}</content>`,
      '</entry>',
    ].join('\n');
  });
  const xml = [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom">',
    `<id>${x(`${origin}/feed.atom?${listingQuery(listing)}`)}</id>`,
    `<title type="text">${x(feedTitle(listing))}</title>`,
    `<link rel="self" type="application/atom+xml" href="${x(opts.self)}"/>`,
    `<link rel="alternate" type="text/html" href="${x(page)}"/>`,
    `<updated>${(newest === null ? opts.now : new Date(newest)).toISOString()}</updated>`,
    `<generator uri="${x(origin)}/">pixvote</generator>`,
    ...entries,
    '</feed>',
    '',
  ].join('\n');
  return { xml, etag: `W/"${createHash('sha1').update(xml).digest('base64url')}"`, lastModified };
}
