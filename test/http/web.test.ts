/**
 * The web front end over plain HTTP (issue 20): the pages' own CSP (no inline script), hashed assets with
 * one-year caching and compression, the API's headers unchanged, page routes that collide with nothing of the
 * API, and the first feed page's weight.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { pngImage } from '../support/fixtures.ts';
import { PAGE_CSP, escapeHtml } from '../../src/gateway/routes/web.routes.ts';
import { SECURITY_HEADERS } from '../../src/gateway/security-headers.ts';
import { WEB_LIMITS } from '../../src/gateway/web-limits.ts';
import { webAssetsReady } from '../../src/gateway/web-assets.ts';
import { USERNAME_RE } from '../../src/gateway/schemas/auth.schemas.ts';
import { REPORT_REASONS } from '../../src/domain/moderation/moderation.types.ts';
import { MAX_FILE_BYTES } from '../../src/domain/uploads/limits.ts';
import { MAX_DESCRIPTION } from '../../src/domain/uploads/upload.service.ts';
import { MAX_TAG_LENGTH, MAX_TAGS_PER_UPLOAD } from '../../src/domain/tags.ts';

let app: TestApp;
before(async () => {
  app = await startApp();
});
after(() => app.close());

const PAGES = [
  '/',
  '/new',
  '/signin',
  '/signup',
  '/profile',
  '/moderation',
  '/modlog',
  `/uploads/${crypto.randomUUID()}`,
];
const get = (path: string, headers: Record<string, string> = {}) =>
  app.api.get(path, { headers, unchecked: 'an HTML page or asset, not an API route' });

test('every page is HTML with its own CSP: scripts and styles from this origin only, never inline', async () => {
  assert.match(PAGE_CSP, /default-src 'none'/);
  assert.match(PAGE_CSP, /script-src 'self'(;|$)/);
  assert.match(PAGE_CSP, /style-src 'self'(;|$)/);
  assert.match(PAGE_CSP, /frame-ancestors 'none'/);
  assert.doesNotMatch(PAGE_CSP, /unsafe-inline|unsafe-eval|\*/);
  for (const path of PAGES) {
    const r = await get(path);
    // An upload that is not there is a page saying so, with its status (unfurl.test.ts tests the rest).
    assert.equal(r.status, path.startsWith('/uploads/') ? 404 : 200, path);
    assert.match(r.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
    assert.equal(r.headers.get('content-security-policy'), PAGE_CSP, path);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('x-frame-options'), 'DENY');
    assert.equal(r.headers.get('cross-origin-opener-policy'), 'same-origin');
    assert.match(r.headers.get('cache-control') ?? '', /private/);
    // The feed's first page rides along as data (type="application/json": never executed); nothing else inline.
    const markup = r.text.replace(/<script type="application\/json" id="first-page"[^>]*>[^<]*<\/script>/, '');
    assert.doesNotMatch(
      markup,
      /<script>|<script [^>]*>[^<]|<style| style=| on[a-z]+=/i,
      'no inline script, style or handler',
    );
    assert.doesNotMatch(r.text, /https?:\/\//, 'the page names nothing outside the service');
  }
});

test('the API keeps its own headers: a CSP that allows nothing', async () => {
  for (const path of ['/api/uploads', '/healthz', '/api/modlog']) {
    const r = await app.api.get(path);
    for (const [name, value] of SECURITY_HEADERS) assert.equal(r.headers.get(name), value, `${path} ${name}`);
  }
  assert.equal((await app.api.get('/docs')).headers.get('content-security-policy')?.includes('frame-src'), false);
  // Unknown paths outside the pages are still the API's JSON 404.
  const missing = await get('/no-such-page');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error, 'not_found');
  assert.equal((await get('/api/nothing')).body.error, 'not_found');
});

test('assets: a bundle per page, hashed names, immutable for a year, Brotli or gzip, 404 otherwise', async () => {
  const html = (await get('/')).text;
  const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  // icon, stylesheet, and the page's one script: its bundle (no module is fetched on its own, none preloaded)
  assert.equal(assets.filter((a) => /\.(svg|css)$/.test(a)).length, 2, assets.join(', '));
  const scripts = [...html.matchAll(/<script type="module" src="(\/assets\/[^"]+)"><\/script>/g)].map((m) => m[1]!);
  const served = await webAssetsReady();
  assert.deepEqual(scripts, [served.bundle('feed').path]);
  assert.equal(html.includes('modulepreload'), false);
  const bundles = ['feed', 'user', 'upload', 'new', 'signin', 'signup', 'profile', 'moderation', 'modlog'].map(
    (page) => served.bundle(page).path,
  );
  assert.equal(new Set(bundles).size, 7, 'pages with the same module share its bundle');
  const modules = ['app.js', 'cards.js', 'dom.js', 'limits.js', 'thumbhash.js', 'feed.js', 'tus-js-client.js'].map(
    (name) => served.module(name)?.path ?? name,
  );
  // The upload form's resumable client (tus-js-client) is a bundle of its own, which the form imports when needed.
  const lazy = served.lazy('lib/resumable.js')?.path ?? 'lib/resumable.js';
  for (const path of new Set([...assets, ...bundles, ...modules, lazy])) {
    assert.match(path, /^\/assets\/[a-z-]+\.[0-9a-f]{12}\.(js|css|svg)$/);
    const plain = await get(path, { 'accept-encoding': 'identity' });
    assert.equal(plain.status, 200, path);
    assert.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(plain.headers.get('content-encoding'), null);
    if (path.endsWith('.js')) assert.equal(plain.headers.get('content-type'), 'text/javascript; charset=utf-8', path);
    // A bundle imports nothing up front: everything its page runs is in it; the upload form's, and only it, imports
    // the resumable client's bundle when a large file is chosen.
    if (bundles.includes(path) || path === lazy) {
      const parts = plain.text.split(`import("${lazy}")`);
      assert.equal(parts.length, path === served.bundle('new').path ? 2 : 1, path);
      assert.equal(/\bimport\s*[("'{*]|from\s*["']/.test(parts.join('')), false, path);
      // The pages' CSP allows no eval: neither do the bundles (tus-js-client's browser build included).
      assert.doesNotMatch(plain.text, /\beval\s*\(|\bnew\s+Function\b|[^\w.$]Function\s*\(/, path);
    }
    const br = await fetch(app.url + path, { headers: { 'accept-encoding': 'br' } });
    assert.equal(br.headers.get('content-encoding'), 'br');
    assert.equal(Buffer.from(await br.arrayBuffer()).equals(plain.bytes), true, 'fetch decodes to the same bytes');
    const gz = await fetch(app.url + path, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(gz.headers.get('content-encoding'), 'gzip');
    // A coding refused by its q-value is not sent (it used to be: the header was matched by a regex).
    const noBr = await fetch(app.url + path, { headers: { 'accept-encoding': 'br;q=0, gzip' } });
    assert.equal(noBr.headers.get('content-encoding'), 'gzip');
  }
  // The modules served one by one import each other by their hashed paths, the lazy ones too.
  const cards = (await get(served.module('cards.js')!.path)).text;
  assert.ok(cards.includes(`from '${served.module('thumbhash.js')!.path}'`), 'cards.js imports the hashed thumbhash');
  const form = (await get(served.module('new.js')!.path)).text;
  assert.ok(form.includes(`import('${served.module('resumable.js')!.path}')`), 'new.js imports resumable.js lazily');
  const resumable = (await get(served.module('resumable.js')!.path)).text;
  assert.ok(resumable.includes(`from '${served.module('tus-js-client.js')!.path}';`), 'and it tus-js-client');
  assert.equal((await get('/assets/app.000000000000.js')).status, 404);
  assert.equal((await get('/favicon.ico')).status, 200);
});

test("the pages' limits module is the server's own limits", async () => {
  const served = await webAssetsReady();
  const path = served.module('limits.js')?.path;
  assert.ok(path, 'the limits module is served');
  const source = (await get(path)).text;
  // The upload form's bundle carries the same limits.
  const bundle = (await get(served.bundle('new').path)).text;
  assert.ok(bundle.includes(`maxFileBytes:${MAX_FILE_BYTES}`), 'the upload form has the limits in its bundle');
  const { limits } = (await import(`data:text/javascript,${encodeURIComponent(source)}`)) as { limits: unknown };
  assert.deepEqual(limits, WEB_LIMITS);
  assert.deepEqual(WEB_LIMITS.reportReasons, REPORT_REASONS);
  assert.equal(WEB_LIMITS.maxFileBytes, MAX_FILE_BYTES);
  assert.equal(WEB_LIMITS.maxTags, MAX_TAGS_PER_UPLOAD);
  assert.equal(WEB_LIMITS.maxTagLength, MAX_TAG_LENGTH);
  assert.equal(WEB_LIMITS.maxDescription, MAX_DESCRIPTION);
  assert.match('ada_lovelace', new RegExp(`^(?:${WEB_LIMITS.usernamePattern})$`));
  assert.equal(new RegExp(`^${WEB_LIMITS.usernamePattern}$`).source, USERNAME_RE.source);
});

/** A page's weight on the wire: the document and its scripts and stylesheet as Brotli, by part. */
async function wireWeight(path: string, headers: Record<string, string> = {}) {
  const html = await get(path, headers);
  // The page itself is sent compressed (Brotli when asked for, gzip otherwise): its bytes on the wire.
  const wirePage = await fetch(app.url + path, { headers: { ...headers, 'accept-encoding': 'br' } });
  assert.equal(wirePage.headers.get('content-encoding'), 'br');
  assert.equal(wirePage.headers.get('vary'), 'Accept-Encoding');
  const gz = await fetch(app.url + path, { headers: { ...headers, 'accept-encoding': 'gzip' } });
  assert.equal(gz.headers.get('content-encoding'), 'gzip');
  assert.equal(await gz.text(), html.text, 'the gzip page is the same page');
  let total = Number(wirePage.headers.get('content-length'));
  assert.ok(total > 0 && total < html.bytes.length / 2, `the page is compressed: ${total} of ${html.bytes.length}`);
  assert.ok(gzipSync(html.bytes).length <= 100 * 1024);
  const sizes: Record<string, number> = { html: total };
  for (const m of html.text.matchAll(/(?:src|href)="(\/assets\/[^"]+\.(?:js|css))"/g)) {
    const r = await fetch(app.url + m[1]!, { headers: { 'accept-encoding': 'br' } });
    const wire = Number(r.headers.get('content-length'));
    sizes[m[1]!] = wire;
    total += wire;
  }
  // And even gzip alone fits: the budget does not rest on Brotli.
  assert.ok(brotliCompressSync(html.bytes).length > 0);
  return { total, sizes };
}

test('the first feed page weighs at most 100 KB compressed (HTML, CSS and JS)', async () => {
  const { total, sizes } = await wireWeight('/');
  assert.ok(total <= 100 * 1024, `first feed page: ${total} bytes ${JSON.stringify(sizes)}`);
});

test('the upload form, with its resumable (tus) client, weighs at most 100 KB compressed', async () => {
  const user = await registerUser(app.api);
  const { total, sizes } = await wireWeight('/new', { cookie: `auth-token=${user.token}` });
  // And what it fetches when a file larger than one chunk is chosen: the resumable client (tus-js-client).
  const lazy = (await webAssetsReady()).lazy('lib/resumable.js')!.path;
  const r = await fetch(app.url + lazy, { headers: { 'accept-encoding': 'br' } });
  assert.equal(r.headers.get('content-encoding'), 'br');
  const client = Number(r.headers.get('content-length'));
  assert.ok(client > 0);
  assert.ok(total + client <= 100 * 1024, `the upload form: ${total} + ${client} bytes ${JSON.stringify(sizes)}`);
  // Printed for docs/web-pages.md: the form's script is most of it.
  console.log(`the upload form on the wire: ${total} B ${JSON.stringify(sizes)}; its resumable client ${client} B`);
});

test('the shell names the signed-in visitor, escaped; a bad cookie is an anonymous page, not an error', async () => {
  assert.equal(
    escapeHtml(`<img src=x onerror="a('b')">&`),
    '&lt;img src=x onerror=&quot;a(&#39;b&#39;)&quot;&gt;&amp;',
  );
  const user = await registerUser(app.api);
  const r = await get('/', { cookie: `auth-token=${user.token}` });
  assert.match(r.text, new RegExp(`data-user="${user.username}"`));
  assert.match(r.text, /data-role="user"/);
  assert.doesNotMatch(r.text, /href="\/moderation"/);
  const admin = await registerAdmin(app);
  assert.match((await get('/', { cookie: `auth-token=${admin.token}` })).text, /href="\/moderation"/);
  const bad = await get('/', { cookie: 'auth-token=not-a-jwt' });
  assert.equal(bad.status, 200);
  assert.doesNotMatch(bad.text, /data-user=/);
});

test('the feed page carries its first page as /api/uploads answers it and preloads the first thumbnails', async () => {
  const user = await registerUser(app.api);
  const hostile = '</script><script>window.__pwned=1</script><!-- & \u2028';
  const r = await uploadImage(app.api, user.token, await pngImage(200, 150, 321), {
    description: hostile,
    tags: 'web',
  });
  assert.equal(r.status, 201, r.text);
  for (const [page, query] of [
    ['/', 'page=1&limit=24&sort=new'],
    ['/?sort=top&tag=Web', 'page=1&limit=24&sort=top&tag=web'],
  ] as const) {
    const html = (await get(page)).text;
    const block = /<script type="application\/json" id="first-page" data-query="([^"]*)">([^<]*)<\/script>/.exec(html);
    assert.ok(block, `${page}: the first page is embedded`);
    assert.equal(block[1]!.replace(/&amp;/g, '&'), query);
    const api = await app.api.get(`/api/uploads?${query}`);
    assert.deepEqual(JSON.parse(block[2]!), api.body, 'the same page the API answers');
    assert.equal(html.match(/<script/g)?.length, 2, 'the hostile description closes nothing');
    assert.ok(html.includes(`<link rel="preload" as="image" href="/api/image/${r.body.id}?size=thumb"`));
    // The same, and the stylesheet, in the Link header (seen before the document is parsed).
    const link = (await get(page)).headers.get('link') ?? '';
    assert.match(link, /^<\/assets\/app\.[0-9a-f]{12}\.css>; rel=preload; as=style/);
    assert.ok(link.includes(`</api/image/${r.body.id}?size=thumb>; rel=preload; as=image; fetchpriority=high`), link);
  }
  // A query the API refuses embeds nothing; the page still answers (app.js then shows the API's refusal).
  const bad = await get('/?sort=sideways');
  assert.equal(bad.status, 200);
  assert.ok(!bad.text.includes('first-page'));
  assert.match(bad.headers.get('link') ?? '', /^<\/assets\/app\.[0-9a-f]{12}\.css>; rel=preload; as=style$/);
});
