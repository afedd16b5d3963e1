/**
 * The web front end (issue 20): the pages people use in a browser, served by the same process.
 *
 * Each page is one small HTML document (this file) that names its page, the signed-in visitor (from the
 * auth-token cookie the authenticate middleware already resolved) and its static assets: one script, the page's
 * bundle of the boot `web/app.js` and the page's own module (`web/pages/*.js`, checked JavaScript like
 * `web/lib/*.js`; src/gateway/web-assets.ts), which enhances what the server rendered or renders the page from the
 * public API (`/api/*`) and does every write through it with the cookie, so the pages use nothing the API does not
 * offer anyone. User text only ever reaches the DOM as text nodes or attribute values (never as markup); every
 * server-rendered string (the visitor's name, the feed's first page) goes through `escapeHtml`.
 *
 * Assets are served from memory under content-hashed names with one-year immutable caching, precompressed
 * (Brotli, gzip). Pages get their own Content-Security-Policy: scripts, styles, fetches from this origin only,
 * no inline script or style; images from here plus data:/blob: (ThumbHash placeholders, the upload preview);
 * frames only from the embed providers, and only once the visitor asks for an embed.
 *
 * The feed's first page is what makes its Largest Contentful Paint: `/` carries the very bytes
 * `GET /api/uploads` answers for it (the same cached page, as a non-executable JSON block the module reads
 * instead of fetching it), preloads its first thumbnails, and shows that page already rendered in `<main>`
 * (src/gateway/views/feed-view.ts, the view web/pages/feed.js would build; it adopts it), so the thumbnails paint
 * without waiting for any script (issue 30).
 */
import { brotliCompressSync, constants as zlibConstants, gzipSync } from 'node:zlib';
import Router from '@koa/router';
import { AppError, errors } from '../../domain/errors.ts';
import type { FeedService } from '../../domain/feeds/feed.service.ts';
import type { ModerationService } from '../../domain/moderation/moderation.service.ts';
import type { UploadService } from '../../domain/uploads/upload.service.ts';
import type { Scope } from '../../domain/auth/scopes.ts';
import { banRefusal, viewerWith, type Principal, type UserRecord } from '../../domain/users.ts';
import { feedTitle, listingQuery, type AtomListing } from '../atom-feed.ts';
import type { AppContext, AppState } from '../context.ts';
import { takesCoding } from '../fresh.ts';
import { localPath } from '../local-path.ts';
import { USERNAME_RE } from '../schemas/auth.schemas.ts';
import { FeedQuery } from '../schemas/community.schemas.ts';
import { requestOrigin } from '../request-origin.ts';
import { DOCUMENT_HEADERS } from '../security-headers.ts';
import { descriptionMeta } from '../page-meta.ts';
import { missingUploadPage, uploadHead, uploadMainHtml, uploadPageImage } from '../upload-page.ts';
import { webAssets, type Asset, type WebAssets } from '../web-assets.ts';
import { MAX_TAG_LENGTH } from '../../domain/tags.ts';
import { EAGER_THUMBNAILS, FEED_PAGE_SIZE, MODLOG_PAGE_SIZE } from '../web-limits.ts';
import { accepted } from '../validate.ts';
import { type Upload as CardUpload } from '../views/card-view.ts';
import { feedView, type FeedView } from '../views/feed-view.ts';
import { modlogView } from '../views/modlog-view.ts';
import { el, escapeHtml, toHtml, userPath } from '../web-render.ts';

/** The hosts an upload's `embed.embed_url` can name (src/domain/embeds.ts builds them from the URL alone). */
export const EMBED_FRAME_HOSTS = [
  'https://www.youtube-nocookie.com',
  'https://open.spotify.com',
  'https://embed.bsky.app',
  'https://www.instagram.com',
  'https://www.threads.com',
];

/**
 * The pages' Content-Security-Policy. `imageOrigins`: where else images may come from — the object store's
 * origin when image GETs answer with a presigned redirect (MEDIA_REDIRECT=true), which `img-src 'self'` would
 * otherwise block after the redirect.
 */
export function pageCsp(imageOrigins: readonly string[] = []): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    ["img-src 'self' data: blob:", ...imageOrigins].join(' '),
    "connect-src 'self'",
    `frame-src ${EMBED_FRAME_HOSTS.join(' ')}`,
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export const PAGE_CSP = pageCsp();

const ASSET_CACHE = 'public, max-age=31536000, immutable';

export { escapeHtml };

/** The pages: path → [page name, title]. A page's own data (an upload's id) is in its path. */
const PAGES: ReadonlyArray<readonly [string, string, string]> = [
  ['/', 'feed', 'pixvote'],
  ['/new', 'new', 'Upload · pixvote'],
  ['/uploads/:id', 'upload', 'Upload · pixvote'],
  ['/u/:username', 'user', 'Uploads · pixvote'],
  ['/signin', 'signin', 'Sign in · pixvote'],
  ['/signup', 'signup', 'Sign up · pixvote'],
  ['/profile', 'profile', 'Your profile · pixvote'],
  ['/moderation', 'moderation', 'Moderation · pixvote'],
  ['/modlog', 'modlog', 'Moderation log · pixvote'],
];

interface FirstPage {
  /** The API query string app.js would send for this page. */
  query: string;
  json: string;
  thumbnails: string[];
  /** The page as the server renders it into `<main>` (src/gateway/views/feed-view.ts). */
  view: FeedView;
}

/**
 * The first feed page as GET /api/uploads answers it, or null when the page's query is not one it takes.
 * `user`: the feed of that user's uploads (`/u/{username}`).
 */
async function firstFeedPage(
  feeds: FeedService,
  ctx: AppContext,
  me: Principal | null,
  user = '',
): Promise<FirstPage | null> {
  const one = (v: unknown) => (typeof v === 'string' ? v : '');
  const sort = one(ctx.query.sort) || 'new';
  const tag = one(ctx.query.tag).normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-');
  const cursor = one(ctx.query.cursor) || null;
  const page = Math.max(1, Number.parseInt(one(ctx.query.page) || '1', 10) || 1);
  const ai = one(ctx.query.ai);
  // The same parameters, in the same order, as feed.js's request.
  const params = new URLSearchParams(cursor ? { cursor } : { page: String(page) });
  params.set('limit', String(FEED_PAGE_SIZE));
  params.set('sort', sort);
  if (tag) params.set('tag', tag);
  if (user) params.set('user', user);
  if (ai) params.set('ai', ai);
  // What GET /api/uploads takes (its NUL rule too), else the page without its first feed page.
  const query = accepted(FeedQuery, Object.fromEntries(params));
  if (!query) return null;
  // A foreign cursor or a page too deep: an HTML 400 page in words (error-page.ts), with JavaScript or without.
  const json = (await feeds.list(query)).body.toString('utf8');
  const body = JSON.parse(json) as { uploads: CardUpload[]; has_more: boolean; next_cursor: string | null };
  const thumbnails = body.uploads.slice(0, EAGER_THUMBNAILS).flatMap((u) => (u.image ? [u.image.thumbnail_url] : []));
  const view = {
    sort: query.sort,
    tag,
    user,
    ai: query.ai ?? '',
    page,
    cursor,
    uploads: body.uploads,
    hasMore: body.has_more,
    nextCursor: body.next_cursor,
    signedIn: Boolean(me),
    now: Date.now(),
    maxTagLength: MAX_TAG_LENGTH,
    eagerThumbnails: EAGER_THUMBNAILS,
  };
  return { query: params.toString(), json, thumbnails, view };
}

/** JSON inside a <script type="application/json"> block: nothing in it can close the element or open a comment. */
function scriptJson(json: string): string {
  return json.replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

/** The images that make the page's largest paint, preloaded in its head. */
function imagePreloads(images: readonly string[]): string {
  return images
    .map((src) => `<link rel="preload" as="image" href="${escapeHtml(src)}" fetchpriority="high">\n`)
    .join('');
}

/** The feed's first page in the head, as a data block (its JSON). */
function firstPageHead(feed: FirstPage): string {
  const data = `<script type="application/json" id="first-page" data-query="${escapeHtml(feed.query)}">`;
  return `${data}${scriptJson(feed.json)}</script>\n`;
}

/** The images that make a page's largest paint: the feed's first thumbnails, or an upload's image. */
const paintImages = (feed: FirstPage | null, own: OwnContent | null) => feed?.thumbnails ?? own?.images ?? [];

const NOSCRIPT = `<noscript><p>pixvote's pages need JavaScript; the API reference is at
<a href="/docs">/docs</a>.</p></noscript>`;

/**
 * The stylesheet and the images that make the page's largest paint (the feed's first thumbnails, an upload's image)
 * as preloads in the response's `Link` header: Chromium starts them when it commits the navigation, before the
 * parser (and its preload scanner) reaches the `<link>`s in the head, so the images are more often in by the first
 * layout and paint with it (the LCP). Only plain same-origin paths: nothing in a header value can be user text.
 */
function linkHeader(assets: WebAssets, images: readonly string[]): string {
  const links = [`<${assets.css.path}>; rel=preload; as=style`];
  for (const src of images) {
    if (/^\/[\w\-./?=&%]*$/.test(src)) links.push(`<${src}>; rel=preload; as=image; fetchpriority=high`);
  }
  return links.join(', ');
}

/** The feed page's Atom feed (issue 30): the same sort, tag and user, for feed readers to discover. */
function atomLink(ctx: AppContext, user = ''): string {
  const one = (v: unknown) => (typeof v === 'string' ? v : '');
  const sort = one(ctx.query.sort);
  const tag = one(ctx.query.tag).normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-');
  const ai = one(ctx.query.ai);
  const listing: AtomListing = {
    sort: sort === 'top' || sort === 'hot' || sort === 'best' ? sort : 'new',
    tag,
    user,
    ai: ai === 'only' || ai === 'exclude' ? ai : undefined,
  };
  const title = escapeHtml(feedTitle(listing));
  const href = escapeHtml(`/feed.atom?${listingQuery(listing)}`);
  return `<link rel="alternate" type="application/atom+xml" title="${title}" href="${href}">\n`;
}

/**
 * A page whose content the server renders (an upload's, the modlog): its status, title, head metadata and
 * `<main>` (a user's page: the feed's, when it has none of its own).
 */
interface OwnContent {
  status: number;
  title: string;
  head: string;
  main?: string;
  /** Images that make its largest paint (an upload's), preloaded. */
  images?: string[];
}

/** The scope of the reads a page shows its visitor (an upload as GET /api/upload/{id} does, the profile's name). */
const PAGE_SCOPE: Scope = 'read';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `/uploads/{id}` (issue 30): the upload as GET /api/upload/{id} shows it to this visitor, rendered, with its
 * link-preview metadata (src/gateway/upload-page.ts); 404 or 410 with a page saying so when it is not there.
 */
async function uploadPage(uploads: UploadService, ctx: AppContext, me: Principal | null): Promise<OwnContent> {
  const id = String((ctx as AppContext & { params: Record<string, string> }).params.id ?? '');
  try {
    if (!UUID.test(id)) throw errors.notFound(`upload ${id} does not exist`);
    const u = await uploads.get(me ? { userId: me.userId, isAdmin: me.isAdmin } : null, id);
    const image = uploadPageImage(u);
    return {
      status: 200,
      ...uploadHead(u, requestOrigin(ctx)),
      main: uploadMainHtml(u, Boolean(me)),
      ...(image ? { images: [image] } : {}),
    };
  } catch (e) {
    if (e instanceof AppError && (e.code === 'not_found' || e.code === 'removed')) {
      const status = e.code === 'removed' ? 410 : 404;
      return { status, ...missingUploadPage(status) };
    }
    throw e;
  }
}

/** Whose page this is (`/u/{username}`, in the name's own spelling by then), or ''. */
const pageUser = (ctx: AppContext) => (ctx as AppContext & { params: { username?: string } }).params.username ?? '';

/** Finds an account by its name (any case), for its page. */
export type UserByName = (username: string) => Promise<UserRecord | null>;

/**
 * `/u/{username}` (issue 30): the account behind the name, or a 404 (HTML for a browser, error-page.ts) when there
 * is none or it is banned; the name in any other case than its own spelling answers a redirect there (the page's
 * one address, which its module reads the name from).
 */
async function userOf(byName: UserByName, ctx: AppContext): Promise<UserRecord | { redirect: string }> {
  const name = pageUser(ctx);
  const found = USERNAME_RE.test(name) ? await byName(name) : null;
  if (!found || banRefusal(found, new Date())) throw errors.notFound(`there is no user ${name}`);
  if (found.username === name) return found;
  return { redirect: `${userPath(found.username)}${ctx.querystring ? `?${ctx.querystring}` : ''}` };
}

/** A user's page: its title and description; `<main>` is the feed of their uploads. */
function userPageContent(user: UserRecord): OwnContent {
  const description = `Public uploads shared by ${user.username} on pixvote: images and links, with everyone's votes.`;
  return {
    status: 200,
    title: `Uploads by ${user.username} · pixvote`,
    head: `${el('meta', { name: 'description', content: description })}\n`,
  };
}

/**
 * `/modlog` (issue 30): a page of GET /api/modlog as this visitor sees it (src/gateway/views/modlog-view.ts), by number
 * or by cursor. A malformed cursor or a page too deep is the API's 400, as an error page.
 */
async function modlogPage(moderation: ModerationService, ctx: AppContext): Promise<OwnContent> {
  const one = (v: unknown) => (typeof v === 'string' ? v : '');
  const cursor = one(ctx.query.cursor) || null;
  const page = Math.max(1, Number.parseInt(one(ctx.query.page) || '1', 10) || 1);
  // As the API's optional auth with scope `moderate`: a token without it reads the public view.
  const viewer = viewerWith(ctx.state.principal, 'moderate');
  const log = await moderation.modlog(viewer, { page, limit: MODLOG_PAGE_SIZE, ...(cursor ? { cursor } : {}) });
  return {
    status: 200,
    title: 'Moderation log · pixvote',
    head: descriptionMeta('modlog', ctx.query),
    main: toHtml(modlogView({ entries: log.entries, page: log.page, cursor, nextCursor: log.next_cursor })),
  };
}

function renderPage(
  assets: WebAssets,
  page: string,
  title: string,
  ctx: AppContext,
  me: Principal | null,
  feed: FirstPage | null,
  own: OwnContent | null = null,
): string {
  const nav = [
    `<a href="/">Feed</a>`,
    `<a href="/new">Upload</a>`,
    `<a href="/modlog">Modlog</a>`,
    `<a href="/docs">API</a>`,
    ...(me?.isAdmin ? [`<a href="/moderation">Moderation</a>`] : []),
    ...(me
      ? [
          `<a href="/profile">${escapeHtml(me.username)}</a>`,
          `<button type="button" id="signout" class="linklike">Sign out</button>`,
        ]
      : [`<a href="/signin">Sign in</a>`, `<a href="/signup">Sign up</a>`]),
  ];
  const user = me
    ? ` data-user="${escapeHtml(me.username)}" data-user-id="${escapeHtml(me.userId)}" data-role="${
        me.isAdmin ? 'admin' : 'user'
      }"`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(own?.title ?? title)}</title>
${own ? own.head : descriptionMeta(page, ctx.query)}<link rel="icon" href="${assets.icon.path}" type="image/svg+xml">
<link rel="stylesheet" href="${assets.css.path}">
${imagePreloads(paintImages(feed, own))}<script type="module" src="${assets.bundle(page).path}"></script>
${feed ? firstPageHead(feed) : ''}${page === 'feed' || page === 'user' ? atomLink(ctx, pageUser(ctx)) : ''}</head>
<body data-page="${page}"${user}>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/">pixvote</a><nav aria-label="Main">${nav.join('')}</nav></header>
<main id="main" tabindex="-1">${own?.main ?? (feed ? toHtml(feedView(feed.view)) : NOSCRIPT)}</main>
</body>
</html>
`;
}

/**
 * The static assets of the pages: they spend the per-IP media limit (RATE_LIMIT_MEDIA), as image variants do,
 * not the general one (API.md Rate limits); the pages themselves spend the general limit.
 */
export const WEB_MEDIA_PATHS: readonly string[] = ['/assets/:name', '/favicon.ico'];

/** Every path the web front end serves (GET only), as Koa routes: none is part of the API. */
export const WEB_PATHS: readonly string[] = [...PAGES.map(([path]) => path), '/tags/:slug', ...WEB_MEDIA_PATHS];

/**
 * A page's HTML, compressed when the client takes it (the feed's carries its first page twice, as JSON and as
 * cards: ~40 KB, ~8 KB compressed). Brotli at a quality that costs about a millisecond; gzip otherwise.
 */
function sendCompressed(ctx: AppContext, html: string): void {
  ctx.set('Vary', 'Accept-Encoding');
  if (takesCoding(ctx, 'br')) {
    ctx.set('Content-Encoding', 'br');
    ctx.body = brotliCompressSync(html, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 5 } });
  } else if (takesCoding(ctx, 'gzip')) {
    ctx.set('Content-Encoding', 'gzip');
    ctx.body = gzipSync(html, { level: 6 });
  } else {
    ctx.body = html;
  }
}

function sendAsset(ctx: AppContext, asset: Asset): void {
  const res = ctx.res;
  res.setHeader('Cache-Control', ASSET_CACHE);
  res.setHeader('Vary', 'Accept-Encoding');
  res.setHeader('ETag', asset.etag);
  ctx.type = asset.type;
  if (takesCoding(ctx, 'br')) {
    res.setHeader('Content-Encoding', 'br');
    ctx.body = asset.br;
  } else if (takesCoding(ctx, 'gzip')) {
    res.setHeader('Content-Encoding', 'gzip');
    ctx.body = asset.gzip;
  } else {
    ctx.body = asset.raw;
  }
}

export function webRoutes(
  deps: {
    feeds?: FeedService;
    /** Reads an upload for its page (`/uploads/{id}`), as GET /api/upload/{id} does. */
    uploads?: UploadService;
    /** The object store's origin, when image GETs redirect there (MEDIA_REDIRECT=true). */
    mediaOrigin?: string | null;
    /** Reads the modlog for its page (`/modlog`), as GET /api/modlog does. */
    moderation?: ModerationService;
    /** Finds the account of a user's page (`/u/{username}`). */
    userByName?: UserByName;
  } = {},
): Router<AppState> {
  const router = new Router<AppState>();
  const csp = pageCsp(deps.mediaOrigin ? [deps.mediaOrigin] : []);
  const assets = webAssets();
  const missing = PAGES.filter(([, page]) => !assets.hasPage(page));
  if (missing.length)
    throw new Error(`web-assets.ts has no module for the pages ${missing.map(([, p]) => p).join(', ')}`);

  for (const [path, page, title] of PAGES) {
    router.get(path, async (ctx) => {
      // Who the page is for, as the API resolves an optional caller of the reads it shows (GET /api/upload/{id},
      // /api/profile): an API token without `read` is served what anyone is.
      const me = viewerWith(ctx.state.principal, PAGE_SCOPE);
      const user = page === 'user' && deps.userByName ? await userOf(deps.userByName, ctx) : null;
      if (user && 'redirect' in user) {
        ctx.status = 301;
        return ctx.redirect(localPath(user.redirect, requestOrigin(ctx)));
      }
      const feed =
        (page === 'feed' || user) && deps.feeds ? await firstFeedPage(deps.feeds, ctx, me, user?.username) : null;
      const own =
        page === 'upload' && deps.uploads
          ? await uploadPage(deps.uploads, ctx, me)
          : page === 'modlog' && deps.moderation
            ? await modlogPage(deps.moderation, ctx)
            : user
              ? userPageContent(user)
              : null;
      ctx.set('Content-Security-Policy', csp);
      for (const [name, value] of DOCUMENT_HEADERS) ctx.set(name, value);
      // Who is signed in is part of the page: never kept by a shared cache, revalidated by the browser.
      ctx.set('Cache-Control', 'private, no-cache');
      ctx.set('Link', linkHeader(assets, paintImages(feed, own)));
      ctx.type = 'text/html; charset=utf-8';
      if (own) ctx.status = own.status;
      sendCompressed(ctx, renderPage(assets, page, title, ctx, me, feed, own));
    });
  }

  router.get('/assets/:name', (ctx) => {
    const asset = assets.byPath.get(ctx.path);
    if (!asset) throw errors.notFound(`no asset ${ctx.params.name}`);
    sendAsset(ctx, asset);
  });
  // A tag's page (API.md's page routes) is the feed filtered by it: one address for it, `/?tag=<slug>`, which the
  // server renders (readable without JavaScript) and which sort links and cursors keep.
  router.get('/tags/:slug', (ctx) => {
    const q = new URLSearchParams();
    const sort = typeof ctx.query.sort === 'string' ? ctx.query.sort : '';
    if (sort && sort !== 'new') q.set('sort', sort);
    q.set('tag', (ctx.params.slug ?? '').normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-'));
    ctx.status = 301;
    ctx.redirect(localPath(`/?${q.toString()}`, requestOrigin(ctx)));
  });
  // Browsers ask for /favicon.ico on their own (pages name the SVG icon; this is for everything else).
  router.get('/favicon.ico', (ctx) => {
    sendAsset(ctx, assets.icon);
    ctx.set('Cache-Control', 'public, max-age=86400');
  });

  return router;
}

/** Error pages for browsers (error-page.ts): the pages' own CSP and document headers, and their stylesheet. */
export const WEB_ERROR_PAGE = {
  csp: PAGE_CSP,
  headers: DOCUMENT_HEADERS,
  stylesheet: () => webAssets().css.path,
};
