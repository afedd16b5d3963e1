import { errors } from './errors.ts';

/** The platforms API.md promises rich embeds for. */
export type EmbedProvider = 'youtube' | 'spotify' | 'bluesky' | 'instagram' | 'threads' | 'tumblr';

/** The `embed` of a link Upload record (API.md), built from the URL alone. */
export interface Embed {
  provider: EmbedProvider | null;
  embed_url: string | null;
  html: string | null;
}

const MAX_URL_LENGTH = 2048;

/**
 * Parses the `external_url` of a link upload: an absolute http(s) URL of at most 2048 characters without
 * user name or password. Throws `invalid_request` naming `external_url`.
 */
export function validateExternalUrl(raw: string): URL {
  if (typeof raw !== 'string' || raw.trim() === '') throw errors.invalid('external_url is required for a link upload');
  if (raw.length > MAX_URL_LENGTH) {
    throw errors.invalid(`Expected at most ${MAX_URL_LENGTH} characters for external_url but received ${raw.length}`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.invalid('external_url must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw errors.invalid('external_url must be an http or https URL');
  if (url.username !== '' || url.password !== '')
    throw errors.invalid('external_url must not contain a user name or password');
  // Percent-encoding can make the stored form longer than what was sent.
  if (url.href.length > MAX_URL_LENGTH)
    throw errors.invalid(`external_url is longer than ${MAX_URL_LENGTH} characters once normalised`);
  return url;
}

/**
 * Recognises a YouTube, Spotify, Bluesky, Instagram, Threads or Tumblr post from its URL and builds the embed.
 * Pure: no network. Hosts are compared exactly, every id is checked against its platform's syntax, and every value
 * placed in `html` is escaped. Anything unrecognised gets an all-null embed.
 */
export function buildEmbed(url: URL): Embed {
  if (url.protocol === 'spotify:') return spotifyUri(url) ?? none();
  if (
    (url.protocol !== 'https:' && url.protocol !== 'http:') ||
    url.username !== '' ||
    url.password !== '' ||
    url.port !== ''
  ) {
    return none();
  }
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  const segs = url.pathname.split('/').filter((s) => s !== '');
  return (
    youtube(host, segs, url) ??
    spotify(host, segs) ??
    bluesky(host, segs) ??
    instagram(host, segs) ??
    threads(host, segs) ??
    tumblr(host, segs) ??
    none()
  );
}

const none = (): Embed => ({ provider: null, embed_url: null, html: null });

// ---------- YouTube ----------

const YOUTUBE_HOSTS = new Set([
  'youtube.com',
  'www.youtube.com',
  'm.youtube.com',
  'music.youtube.com',
  'youtube-nocookie.com',
  'www.youtube-nocookie.com',
]);
const YOUTUBE_ID = /^[A-Za-z0-9_-]{11}$/;

function youtube(host: string, segs: string[], url: URL): Embed | null {
  let id: string | undefined;
  if (host === 'youtu.be') id = segs.length === 1 ? segs[0] : undefined;
  else if (YOUTUBE_HOSTS.has(host)) {
    if (segs.length === 1 && segs[0] === 'watch') id = url.searchParams.get('v') ?? undefined;
    else if (segs.length === 2 && ['shorts', 'live', 'embed', 'v'].includes(segs[0] as string)) id = segs[1];
  }
  if (id === undefined || !YOUTUBE_ID.test(id)) return null;
  const start = startSeconds(url.searchParams.get('t') ?? url.searchParams.get('start'));
  const embedUrl = `https://www.youtube-nocookie.com/embed/${id}${start > 0 ? `?start=${start}` : ''}`;
  const html =
    `<iframe width="560" height="315" src="${esc(embedUrl)}" title="YouTube video player" frameborder="0" ` +
    'allow="accelerometer; autoplay; clipboard-write; encrypted-media; gyroscope; picture-in-picture; web-share" ' +
    'referrerpolicy="strict-origin-when-cross-origin" allowfullscreen loading="lazy"></iframe>';
  return { provider: 'youtube', embed_url: embedUrl, html };
}

/** `90`, `90s`, `1m30s`, `1h2m3s` → seconds; anything else → 0 (no start). */
function startSeconds(value: string | null): number {
  const m = value === null ? null : /^(?:(\d{1,6})h)?(?:(\d{1,6})m)?(?:(\d{1,9})s?)?$/.exec(value);
  if (m === null) return 0;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

// ---------- Spotify ----------

const SPOTIFY_TYPES = new Set(['track', 'album', 'playlist', 'artist', 'episode', 'show']);
const SPOTIFY_ID = /^[A-Za-z0-9]{22}$/;

function spotify(host: string, segs: string[]): Embed | null {
  if (host !== 'open.spotify.com') return null;
  const rest = segs[0] !== undefined && /^intl-[a-z]{2}(?:-[a-z]{2})?$/i.test(segs[0]) ? segs.slice(1) : segs;
  const [type, id] = rest[0] === 'embed' ? rest.slice(1) : rest;
  return spotifyEmbed(type, id);
}

/** `spotify:track:{id}` URIs, as the desktop app copies them. */
function spotifyUri(url: URL): Embed | null {
  const parts = url.pathname.split(':');
  return parts.length === 2 ? spotifyEmbed(parts[0], parts[1]) : null;
}

function spotifyEmbed(type: string | undefined, id: string | undefined): Embed | null {
  if (type === undefined || id === undefined || !SPOTIFY_TYPES.has(type) || !SPOTIFY_ID.test(id)) return null;
  const embedUrl = `https://open.spotify.com/embed/${type}/${id}`;
  const height = type === 'track' || type === 'episode' ? 152 : 352;
  const html =
    `<iframe style="border-radius:12px" src="${esc(embedUrl)}" width="100%" height="${height}" frameborder="0" ` +
    'allowfullscreen allow="autoplay; clipboard-write; encrypted-media; fullscreen; picture-in-picture" ' +
    'loading="lazy" title="Spotify embed"></iframe>';
  return { provider: 'spotify', embed_url: embedUrl, html };
}

// ---------- Bluesky ----------

const DID = /^did:(?:plc:[a-z2-7]{24}|web:[a-zA-Z0-9.-]{1,253}(?:%3[aA]\d{1,5})?)$/;
const HANDLE = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
const RKEY = /^(?!\.{1,2}$)[A-Za-z0-9._:~-]{1,512}$/;

function bluesky(host: string, segs: string[]): Embed | null {
  if (host !== 'bsky.app' || segs.length !== 4 || segs[0] !== 'profile' || segs[2] !== 'post') return null;
  const actor = segs[1] as string;
  const rkey = segs[3] as string;
  if (!RKEY.test(rkey)) return null;
  if (DID.test(actor)) {
    const embedUrl = `https://embed.bsky.app/embed/${actor}/app.bsky.feed.post/${rkey}`;
    const html =
      `<iframe src="${esc(embedUrl)}" title="Bluesky post" width="100%" height="400" frameborder="0" ` +
      'loading="lazy"></iframe>';
    return { provider: 'bluesky', embed_url: embedUrl, html };
  }
  if (!HANDLE.test(actor)) return null;
  const handle = actor.toLowerCase();
  // Turning a handle into the DID the iframe needs takes a lookup; the blockquote works with embed.js as it is.
  const link = `https://bsky.app/profile/${handle}/post/${rkey}?ref_src=embed`;
  const html =
    `<blockquote class="bluesky-embed" data-bluesky-uri="${esc(`at://${handle}/app.bsky.feed.post/${rkey}`)}">` +
    `<p><a href="${esc(link)}">View this post on Bluesky</a></p>&mdash; @${esc(handle)}</blockquote>`;
  return { provider: 'bluesky', embed_url: null, html };
}

// ---------- Instagram ----------

const INSTAGRAM_HOSTS = new Set(['instagram.com', 'www.instagram.com', 'instagr.am', 'www.instagr.am']);
// A Map, not an object literal: "constructor" must not look like a kind.
const INSTAGRAM_KINDS: ReadonlyMap<string, string> = new Map([
  ['p', 'p'],
  ['reel', 'reel'],
  ['reels', 'reel'],
  ['tv', 'tv'],
]);
const SHORTCODE = /^[A-Za-z0-9_-]{5,64}$/;
const META_USER = /^[A-Za-z0-9._]{1,30}$/;

function instagram(host: string, segs: string[]): Embed | null {
  if (!INSTAGRAM_HOSTS.has(host)) return null;
  // Either /{kind}/{code} or /{username}/{kind}/{code}.
  const at = INSTAGRAM_KINDS.has(segs[0] ?? '') ? 0 : META_USER.test(segs[0] ?? '') ? 1 : -1;
  const kind = at < 0 ? undefined : INSTAGRAM_KINDS.get(segs[at] ?? '');
  const code = segs[at + 1];
  if (kind === undefined || code === undefined || !SHORTCODE.test(code) || segs.length > at + 3) return null;
  const permalink = `https://www.instagram.com/${kind}/${code}/?utm_source=ig_embed&utm_campaign=loading`;
  const html =
    `<blockquote class="instagram-media" data-instgrm-permalink="${esc(permalink)}" data-instgrm-version="14">` +
    `<a href="${esc(permalink)}" target="_blank" rel="noopener noreferrer">` +
    'View this post on Instagram</a></blockquote>';
  return { provider: 'instagram', embed_url: `https://www.instagram.com/${kind}/${code}/embed`, html };
}

// ---------- Threads ----------

const THREADS_HOSTS = new Set(['threads.net', 'www.threads.net', 'threads.com', 'www.threads.com']);

function threads(host: string, segs: string[]): Embed | null {
  if (!THREADS_HOSTS.has(host) || segs[1] !== 'post' || segs.length > 4) return null;
  const user = segs[0]?.startsWith('@') ? segs[0].slice(1) : '';
  const code = segs[2] ?? '';
  if (!META_USER.test(user) || !SHORTCODE.test(code)) return null;
  // threads.net moved to threads.com in 2025; its embed.js reads this blockquote.
  const permalink = `https://www.threads.com/@${user}/post/${code}`;
  const html =
    `<blockquote class="text-post-media" data-text-post-permalink="${esc(permalink)}" data-text-post-version="0" ` +
    `id="${esc(`ig-tp-${code}`)}">` +
    `<a href="${esc(permalink)}" target="_blank" rel="noopener noreferrer">View on Threads</a></blockquote>`;
  return { provider: 'threads', embed_url: `${permalink}/embed`, html };
}

// ---------- Tumblr ----------

const TUMBLR_BLOG = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;
const TUMBLR_POST_ID = /^\d{1,20}$/;
/** Sub-domains and first path segments of tumblr.com that are not blogs. */
const TUMBLR_RESERVED = new Set([
  'www',
  'api',
  'assets',
  'static',
  'media',
  'embed',
  'help',
  'dashboard',
  'explore',
  'tagged',
  'search',
  'settings',
  'likes',
  'following',
  'inbox',
  'new',
  'post',
  'reblog',
  'login',
  'register',
  'communities',
  'privacy',
  'policy',
  'about',
  'docs',
  'apps',
  'oauth',
]);

function tumblr(host: string, segs: string[]): Embed | null {
  let blog: string | undefined;
  let id: string | undefined;
  const sub = /^([a-z0-9-]+)\.tumblr\.com$/.exec(host)?.[1];
  if (host === 'tumblr.com' || host === 'www.tumblr.com') {
    // /{blog}/{id}[/slug], or the dashboard's /blog/view/{blog}/{id}
    const rest = segs[0] === 'blog' && segs[1] === 'view' ? segs.slice(2) : segs;
    [blog, id] = rest.length <= 3 ? rest : [];
  } else if (sub !== undefined && sub !== 'www') {
    blog = sub;
    id = segs[0] === 'post' && segs.length <= 3 ? segs[1] : undefined;
  }
  if (
    blog === undefined ||
    id === undefined ||
    !TUMBLR_BLOG.test(blog) ||
    TUMBLR_RESERVED.has(blog) ||
    !TUMBLR_POST_ID.test(id)
  ) {
    return null;
  }
  // The official embed needs a per-post key that is not in the URL, so a plain link card it is.
  const link = `https://www.tumblr.com/${blog}/${id}`;
  const html =
    '<div class="link-card link-card--tumblr">' +
    `<a href="${esc(link)}" target="_blank" rel="noopener noreferrer nofollow">` +
    `Post by ${esc(blog)} on Tumblr</a></div>`;
  return { provider: 'tumblr', embed_url: null, html };
}

const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for an HTML attribute value or element content. */
function esc(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}
