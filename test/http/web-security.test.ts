/**
 * The web pages' safety in a real browser (issue 20): hostile strings in descriptions, file names, token names,
 * report notes and moderation reasons stay text on every page that shows them; a page on another origin cannot
 * vote, upload, delete or create a token with the visitor's cookie (same-site other port: the Origin check
 * refuses; cross-site: SameSite=Lax withholds the cookie).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Browser } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, openPage, watchedPage } from '../support/browser.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadFields, uploadImage } from '../support/uploads.ts';
import { registerAdmin, registerUser } from '../support/users.ts';

let app: TestApp;
let browser: Browser;
before(async () => {
  app = await startApp();
  if (!noBrowser) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await app.close();
});
const opts = { skip: noBrowser };

const PWN = `<b id="injected">bold</b><img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>`;

test('hostile strings are shown as text on every page and never run', opts, async () => {
  const owner = await registerUser(app.api);
  const admin = await registerAdmin(app);
  const img = await uploadImage(
    app.api,
    owner.token,
    await pngImage(320, 240, 501),
    { description: PWN, tags: 'plain' },
    `${PWN}.png`,
  );
  assert.equal(img.status, 201, img.text);
  const link = await uploadFields(app.api, owner.token, {
    upload_type: 'link',
    external_url: `https://example.com/"><script>window.__pwned=1</script>`,
    description: `javascript:alert(1) ${PWN}`,
  });
  assert.equal(link.status, 201, link.text);
  assert.equal((await app.api.post('/api/auth/tokens/generate', { name: PWN }, { token: owner.token })).status, 201);
  const reporter = await registerUser(app.api);
  const report = await app.api.post(
    `/api/upload/${img.body.id}/report`,
    { reason: 'other', note: PWN },
    { token: reporter.token },
  );
  assert.equal(report.status, 201);
  const mod = await app.api.post(
    `/api/admin/uploads/${link.body.id}/moderation`,
    { action: 'approve', reason: PWN },
    { token: admin.token },
  );
  assert.equal(mod.status, 200);

  const visit = async (token: string, paths: string[]) => {
    const context = await browser.newContext();
    await context.addCookies([{ name: 'auth-token', value: token, url: app.url }]);
    const w = await watchedPage(context, app.url);
    for (const path of paths) {
      await openPage(w.page, app.url + path);
      assert.equal(await w.page.evaluate('window.__pwned'), undefined, `${path}: nothing ran`);
      assert.equal(await w.page.locator('#injected, main img[src="x"], main script').count(), 0, `${path}: no markup`);
      const text = await w.page.locator('main').innerText();
      assert.ok(text.includes('<b id="injected">bold</b>'), `${path}: the string is shown as text`);
    }
    assert.deepEqual(w.take(), [], 'no failed or foreign request, no CSP violation');
    await context.close();
  };
  await visit(owner.token, ['/', `/uploads/${img.body.id}`, `/uploads/${link.body.id}`, '/profile']);
  // The feed's first page is rendered by the server too: there, the strings are escaped text in its cards.
  const feed = (await app.api.get('/', { unchecked: 'an HTML page' })).text;
  const grid = /<ol class="grid"[^>]*>[\s\S]*?<\/ol><p class="status"/.exec(feed)?.[0] ?? '';
  assert.ok(grid.includes(`/uploads/${img.body.id}`) && grid.includes(`/uploads/${link.body.id}`), 'both cards');
  assert.ok(grid.includes('&lt;b id=&quot;injected&quot;&gt;bold&lt;/b&gt;'), 'the description, escaped');
  assert.ok(
    grid.includes(
      `alt="${PWN.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')}"`,
    ),
  );
  const outsideData = feed.replace(/<script type="application\/json" id="first-page"[^>]*>[^<]*<\/script>/, '');
  assert.ok(!/<b id="injected"|<img src=x|<script>window/.test(outsideData), 'no markup from the strings');
  await visit(admin.token, ['/moderation', '/modlog']);

  // The hostile link is shown, and is a link only to an http(s) URL; its embed-less card loads nothing.
  const context = await browser.newContext();
  const w = await watchedPage(context, app.url);
  await openPage(w.page, `${app.url}/uploads/${link.body.id}`);
  const hrefs = await w.page.locator('main a').evaluateAll((as: any[]) => as.map((a) => a.href as string));
  assert.ok(
    hrefs.every((h) => /^https?:/.test(h)),
    JSON.stringify(hrefs),
  );
  assert.equal(await w.page.locator('iframe').count(), 0);
  await context.close();
});

test('a link embed loads nothing from its provider until the visitor asks', opts, async () => {
  const owner = await registerUser(app.api);
  const r = await uploadFields(app.api, owner.token, {
    upload_type: 'link',
    external_url: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ',
  });
  assert.equal(r.status, 201, r.text);
  const context = await browser.newContext();
  const w = await watchedPage(context, app.url);
  await openPage(w.page, `${app.url}/uploads/${r.body.id}`);
  assert.equal(await w.page.locator('iframe').count(), 0);
  assert.deepEqual(w.take(), [], 'nothing from youtube before the click');
  const asked = w.page.waitForEvent('requestfailed', (r) => r.url().includes('youtube-nocookie.com'));
  await w.page.click('button:text-is("Load the youtube embed")');
  const frame = w.page.locator('iframe');
  await frame.waitFor({ state: 'attached' });
  assert.match((await frame.getAttribute('src')) ?? '', /^https:\/\/www\.youtube-nocookie\.com\/embed\/dQw4w9WgXcQ/);
  // The test machine has no route out: the only problem is the provider request, made on demand (refused here).
  await asked;
  const problems = w.take();
  assert.ok(
    problems.every((p) => p.includes('youtube-nocookie.com')),
    problems.join('\n'),
  );
  await context.close();
});

/** An attacker's page: POSTs to the service with the visitor's cookie every way a page can without CORS. */
function attackerPage(target: string, uploadId: string, victimUploadId: string): string {
  return `<!doctype html><html><body><form id="f" method="post" action="${target}/api/auth/tokens/generate"
  enctype="text/plain" target="sink"><input name='{"name":"x","y":"' value='"}'></form><iframe name="sink"></iframe>
<script>
window.results = (async () => {
  const send = (path, init) => fetch('${target}' + path, { mode: 'no-cors', credentials: 'include', ...init })
    .then(() => 'sent', (e) => 'blocked: ' + e.message);
  const png = Uint8Array.from(
    atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='),
    (c) => c.charCodeAt(0),
  );
  const fd = new FormData();
  fd.append('upload_type', 'image');
  fd.append('file', new Blob([png], { type: 'image/png' }), 'evil.png');
  const out = {
    vote: await send('/api/vote', { method: 'POST', headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ uploadId: '${uploadId}', vote: 'does_not_fuck' }) }),
    upload: await send('/api/v1/upload', { method: 'POST', body: fd }),
    token: await send('/api/auth/tokens/generate', { method: 'POST', headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ name: 'stolen' }) }),
    // Not a simple request: the browser preflights it, and the service answers no CORS.
    remove: await send('/api/upload/${victimUploadId}', { method: 'DELETE' }),
    removeCors: await fetch('${target}/api/upload/${victimUploadId}', { method: 'DELETE', credentials: 'include' })
      .then((r) => 'status ' + r.status, () => 'blocked'),
    voteCors: await fetch('${target}/api/vote', { method: 'POST', credentials: 'include',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uploadId: '${uploadId}', vote: 'fucks' }) })
      .then((r) => 'status ' + r.status, () => 'blocked'),
  };
  window.formDone = new Promise((resolve) => document.querySelector('iframe').addEventListener('load', resolve));
  document.getElementById('f').submit();
  return out;
})();
</script></body></html>`;
}

test('a page on another origin cannot vote, upload, delete or create a token with the cookie', opts, async () => {
  const victim = await registerUser(app.api);
  const other = await registerUser(app.api);
  const target = await uploadImage(app.api, other.token, await pngImage(300, 200, 611), {}, 'target.png');
  const mine = await uploadImage(app.api, victim.token, await pngImage(300, 200, 612), {}, 'mine.png');
  const before = {
    target: (await app.api.get(`/api/upload/${target.body.id}`)).body,
    uploads: (await app.api.get('/api/profile', { token: victim.token })).body.stats.uploads,
    tokens: (await app.api.get('/api/auth/tokens', { token: victim.token })).body.tokens.length,
  };

  let html = '';
  const evil: Server = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(html);
  });
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
  const evilPort = (evil.address() as { port: number }).port;
  try {
    html = attackerPage(app.url, target.body.id, mine.body.id);
    // Same site (127.0.0.1, another port): the browser sends the Lax cookie, the service refuses by Origin.
    // Cross-site (localhost): the browser does not send the Lax cookie on these requests at all.
    for (const origin of [`http://127.0.0.1:${evilPort}`, `http://localhost:${evilPort}`]) {
      const context = await browser.newContext();
      await context.addCookies([{ name: 'auth-token', value: victim.token, url: app.url }]);
      const page = await context.newPage();
      // What the service answered, seen from the server (the browser hides answers it refuses to the page).
      const statuses: string[] = [];
      const record = (req: IncomingMessage, res: ServerResponse) =>
        res.on('finish', () => statuses.push(`${req.method} ${req.url} ${res.statusCode}`));
      app.server.on('request', record);
      await page.goto(`${origin}/`);
      const results = await page.evaluate<Record<string, string>>('window.results');
      await page.waitForLoadState('load');
      // The form post's answer lands in the attacker's hidden frame.
      await page.evaluate('window.formDone');
      app.server.off('request', record);
      assert.ok(!/status 2\d\d/.test(results.removeCors!), results.removeCors);
      assert.ok(!/status 2\d\d/.test(results.voteCors!), results.voteCors);
      // Whatever reached the service was refused (403 by Origin, or 401 without the cookie).
      for (const s of statuses) assert.match(s, / (401|403)$|^OPTIONS /, `${origin}: ${s}`);
      if (origin.includes('127.0.0.1')) {
        // The cookie went along: the service itself refused each simple request by its Origin.
        for (const path of ['/api/vote', '/api/v1/upload', '/api/auth/tokens/generate']) {
          assert.ok(statuses.includes(`POST ${path} 403`), `${path}: ${statuses.join(', ')}`);
        }
        const forms = statuses.filter((s) => s === 'POST /api/auth/tokens/generate 403');
        assert.equal(forms.length, 2, `the fetch and the form post: ${statuses.join(', ')}`);
      }
      await context.close();
    }
  } finally {
    await new Promise<void>((resolve) => evil.close(() => resolve()));
  }

  const afterTarget = (await app.api.get(`/api/upload/${target.body.id}`)).body;
  assert.equal(afterTarget.upvotes, before.target.upvotes);
  assert.equal(afterTarget.downvote_count, before.target.downvote_count);
  assert.equal((await app.api.get(`/api/upload/${mine.body.id}`)).status, 200, 'not deleted');
  assert.equal(
    (await app.api.get('/api/profile', { token: victim.token })).body.stats.uploads,
    before.uploads,
    'no upload',
  );
  assert.equal(
    (await app.api.get('/api/auth/tokens', { token: victim.token })).body.tokens.length,
    before.tokens,
    'no token',
  );
});

test(
  'signing in goes back only to a path of this origin, as the browser parses `next` (no open redirect)',
  opts,
  async () => {
    const user = await registerUser(app.api);
    const host = new URL(app.url).host;
    // As an attacker writes them (the query string's own encoding). The URL parser drops tab, LF and CR and reads
    // a backslash as a slash: each of the first eight is another host.
    const cases: Array<[string, string]> = [
      ['/%09/evil.example/phish', '/'],
      ['/%0a/evil.example/phish', '/'],
      ['/%0d/evil.example/phish', '/'],
      ['/%5C/evil.example/phish', '/'],
      ['//evil.example/phish', '/'],
      ['https://evil.example/phish', '/'],
      // Issue 44: paths that resolve to `//evil.example/phish` (dot segments; a backslash after one).
      ['/.//evil.example/phish', '/'],
      ['/./%5Cevil.example/phish', '/'],
      [`/%09/${host}/new`, '/new'], // read as //<this host>/new: this origin, so it is kept
      [encodeURIComponent('/new?tab=1#top'), '/new?tab=1#top'],
    ];
    const context = await browser.newContext();
    const w = await watchedPage(context, app.url);
    for (const [next, landing] of cases) {
      await context.clearCookies();
      await openPage(w.page, `${app.url}/signin?next=${next}`);
      await w.page.fill('#login', user.username);
      await w.page.fill('#password', user.password);
      await Promise.all([w.page.waitForURL(`${app.url}${landing}`), w.page.press('#password', 'Enter')]);
      assert.equal(new URL(w.page.url()).host, host, `next=${next}`);
    }
    assert.deepEqual(w.take(), [], 'no request left this origin');
    await context.close();
  },
);
