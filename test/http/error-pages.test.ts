/**
 * Errors are pages (issue 30): a browser asking for a page gets an HTML page with the right status (404, 429 with
 * its wait, 503 in words), the site's header and the pages' CSP; the API and every machine-read path keep the
 * contract's JSON whatever the Accept header says. And `/tags/{slug}`, a page route of API.md, is the feed's tag page.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, watchedPage } from '../support/browser.ts';
import { errors } from '../../src/domain/errors.ts';
import { errorPageHtml, waitInWords, wantsErrorPage } from '../../src/gateway/error-page.ts';
import { PAGE_CSP } from '../../src/gateway/routes/web.routes.ts';

let app: TestApp;
let limited: TestApp;
let browser: Browser | undefined;
const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

before(async () => {
  app = await startApp();
  limited = await startApp({ RATE_LIMIT_GENERAL: '2/15m' });
  if (!noBrowser) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await app.close();
  await limited.close();
});

test('an unknown page is an HTML 404 with the pages’ CSP; the API and programs still get JSON', async () => {
  const page = await fetch(`${app.url}/no/such/page`, { headers: HTML });
  assert.equal(page.status, 404);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(page.headers.get('content-security-policy'), PAGE_CSP);
  assert.equal(page.headers.get('cache-control'), 'no-store');
  const html = await page.text();
  assert.match(html, /<h1>Page not found<\/h1>/);
  assert.match(html, /<a href="\/">Back to the feed<\/a>/);
  assert.match(html, /<link rel="stylesheet" href="\/assets\/app\.[\w]+\.css">/);

  for (const [path, headers] of [
    ['/no/such/page', { accept: 'application/json' }],
    ['/no/such/page', {}],
    ['/api/no-such-route', HTML],
    ['/assets/missing.js', HTML],
    ['/feed.atom?sort=sideways', HTML],
  ] as const) {
    const r = await fetch(app.url + path, { headers });
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/, path);
    const body = (await r.json()) as { error: string };
    assert.ok(body.error, path);
  }
  // A write to a page path is no page: JSON 405.
  const post = await fetch(`${app.url}/`, { method: 'POST', headers: HTML });
  assert.equal(post.status, 405);
  assert.match(post.headers.get('content-type') ?? '', /^application\/json/);
});

test('a cursor of another listing or a page too deep is an HTML 400 page saying so', async () => {
  for (const path of ['/?cursor=bm90LWEtY3Vyc29y', '/?sort=top&page=100000']) {
    const page = await fetch(app.url + path, { headers: HTML });
    assert.equal(page.status, 400, path);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/, path);
    const html = await page.text();
    assert.match(html, /cursor/, `${path}: the page names the way on`);
    assert.doesNotMatch(html, /need JavaScript/, path);
  }
});

test('a spent limit on a page is an HTML 429 that says how long to wait, with Retry-After', async () => {
  for (let i = 0; i < 2; i++) assert.equal((await fetch(`${limited.url}/`, { headers: HTML })).status, 200);
  const r = await fetch(`${limited.url}/`, { headers: HTML });
  assert.equal(r.status, 429);
  const wait = Number(r.headers.get('retry-after'));
  assert.ok(wait >= 1 && wait <= 900);
  assert.ok(r.headers.get('ratelimit-limit'));
  const html = await r.text();
  assert.match(html, /<h1>Too many requests<\/h1>/);
  assert.match(html, new RegExp(`Please wait ${waitInWords(wait)}`));
  const api = await fetch(`${limited.url}/api/uploads`);
  assert.equal(api.status, 429);
  assert.equal(((await api.json()) as { error: string }).error, 'rate_limited');
});

test('each status in words; user text is escaped; only page requests get pages', () => {
  const busy = errorPageHtml(errors.busy('database unreachable', 5), '/assets/app.css', 'req-1');
  assert.match(busy, /Please try again in 5 seconds/);
  assert.match(busy, /Request id: <code>req-1<\/code>/);
  assert.match(errorPageHtml(errors.removed('removed'), null), /Moderation log/);
  assert.match(errorPageHtml(errors.invalid('<b>tag</b> is bad'), null), /&lt;b&gt;tag&lt;\/b&gt; is bad/);
  assert.equal(waitInWords(1), '1 second');
  assert.equal(waitInWords(150), '3 minutes');
  assert.equal(waitInWords(7200), '2 hours');
  assert.equal(wantsErrorPage('GET', '/uploads/x', 'text/html'), true);
  assert.equal(wantsErrorPage('POST', '/uploads/x', 'text/html'), false);
  assert.equal(wantsErrorPage('GET', '/api/upload/x', 'text/html'), false);
  assert.equal(wantsErrorPage('GET', '/uploads/x', 'application/json'), false);
});

test(
  'in Chromium the 404 page renders with the site’s stylesheet and breaks no CSP rule',
  { skip: noBrowser },
  async () => {
    const context = await browser!.newContext();
    const w = await watchedPage(context, app.url);
    const res = await w.page.goto(`${app.url}/nowhere`);
    assert.equal(res?.status(), 404);
    assert.equal(await w.page.locator('h1').innerText(), 'Page not found');
    assert.equal(await w.page.locator('header.top a.brand').getAttribute('href'), '/');
    assert.deepEqual(
      // Chromium logs the page's own status as a console error: that 404 is the point.
      w.take().filter((p) => !p.startsWith('HTTP 404') && !p.includes('status of 404')),
      [],
      'nothing but the 404 itself',
    );
    await context.close();
  },
);

test("a tag's page, /tags/{slug}, is the feed filtered by it: one address, which the server renders", async () => {
  for (const [path, to] of [
    ['/tags/cats', '/?tag=cats'],
    ['/tags/Cute%20Cats?sort=top', '/?sort=top&tag=cute-cats'],
  ] as const) {
    const r = await fetch(app.url + path, { redirect: 'manual', headers: HTML });
    assert.equal(r.status, 301, path);
    assert.equal(r.headers.get('location'), to, path);
  }
  const page = await fetch(`${app.url}/tags/cats`, { headers: HTML });
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<h1>Uploads tagged “cats”<\/h1>/);
});
