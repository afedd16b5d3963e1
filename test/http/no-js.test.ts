/**
 * Server-rendered, then enhanced (issue 30): with JavaScript off in real Chromium, the feed (sorts, a tag, its next
 * page), an upload (image and link), a user's public uploads (`/u/{username}`, its next page), a tag's address,
 * the modlog (its older entries) and the error pages (404, 410) are complete pages whose links navigate; hostile
 * strings (a description, a file name, a moderator's reason, a tag or a name in the URL) are text on every one of
 * them, never elements. With JavaScript on, the user's page and the modlog are the same pages, enhanced.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, openPage, watchedPage, type WatchedPage } from '../support/browser.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadFields, uploadImage, uploadLink } from '../support/uploads.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';

const HOSTILE = `<script>alert(1)</script> "><img src=x onerror=alert(1)> <b id="injected">b</b>`;
/** A hostile tag in a URL (not a valid tag: the feed shows none with it), short enough for the listing to take. */
const HOSTILE_TAG = `<script>alert(1)</script>"><img src=x onerror=alert(1)>`;
/** A hostile file name (no slash: a name is what follows the last one). */
const HOSTILE_NAME = `"><img src=x onerror=alert(1)><b id="injected">.png`;
const TAG = 'nojs-cats';

let app: TestApp;
let owner: TestUser;
let admin: TestUser;
let banned: TestUser;
let imageId: string;
let linkId: string;
let removedId: string;
let privateId: string;
let ownerUploads = 0;

async function moderate(id: string, action: 'approve' | 'hold' | 'remove', reason: string) {
  const r = await app.api.post(`/api/admin/uploads/${id}/moderation`, { action, reason }, { token: admin.token });
  assert.equal(r.status, 200, r.text);
}

before(async () => {
  app = await startApp();
  owner = await registerUser(app.api, `nojs_${Math.random().toString(36).slice(2, 8)}`);
  admin = await registerAdmin(app);
  banned = await registerUser(app.api);
  const other = await registerUser(app.api);
  // More than a page (24) of the owner's uploads, with the tag: the feed, the tag and the user's page all have a
  // next page. Each is held and approved: more than a page (50) of the modlog too.
  for (let i = 0; i < 26; i++) {
    const id = await uploadLink(app.api, owner, { description: `owner link ${i}`, tags: TAG });
    await moderate(id, 'hold', `checking ${i}`);
    await moderate(id, 'approve', `fine ${i}`);
  }
  const img = await uploadImage(
    app.api,
    owner.token,
    await pngImage(640, 480, 3001),
    { description: HOSTILE, tags: `${TAG}, plain` },
    HOSTILE_NAME,
  );
  assert.equal(img.status, 201, img.text);
  imageId = img.body.id;
  const link = await uploadFields(app.api, owner.token, {
    upload_type: 'link',
    external_url: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ',
    description: 'the song',
    tags: TAG,
  });
  assert.equal(link.status, 201, link.text);
  linkId = link.body.id;
  ownerUploads = 28;
  await uploadLink(app.api, other, { description: 'not the owner' });
  removedId = await uploadLink(app.api, other, { description: 'to be removed' });
  await moderate(removedId, 'remove', HOSTILE);
  const secret = await uploadImage(app.api, owner.token, await pngImage(320, 240, 3002), { is_private: 'true' });
  assert.equal(secret.status, 201, secret.text);
  privateId = secret.body.id;
  await moderate(privateId, 'hold', 'private one');
  await uploadLink(app.api, banned, { description: 'by the banned one' });
  const ban = { reason: HOSTILE, until: null, remove_uploads: false };
  const r = await app.api.post(`/api/admin/users/${banned.id}/ban`, ban, { token: admin.token });
  assert.equal(r.status, 200, r.text);
});
after(() => app.close());

/** Elements the hostile strings would have made, had they been markup: none may exist. */
async function injected(p: Page): Promise<string[]> {
  return p.evaluate(`(() => {
    const found = [];
    for (const el of document.querySelectorAll('#injected, img[src="x"], [onerror]')) found.push(el.outerHTML);
    for (const s of document.scripts) {
      if (!s.src && s.type !== 'application/json') found.push(s.outerHTML);
    }
    return found;
  })()`);
}

/** The page's visible text. */
const mainText = (p: Page) => p.locator('main').innerText();

describe('with JavaScript off', { skip: noBrowser }, () => {
  let browser: Browser;
  let context: BrowserContext;
  let w: WatchedPage;
  let p: Page;
  before(async () => {
    browser = await launchBrowser();
    context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 375, height: 800 } });
    w = await watchedPage(context, app.url);
    p = w.page;
  });
  after(async () => {
    await context?.close();
    await browser?.close();
  });

  /** Opens `path`: the status it answered, no script ran, nothing hostile became an element. */
  async function visit(path: string, status = 200) {
    const response = await p.goto(app.url + path, { waitUntil: 'load' });
    assert.equal(response?.status(), status, path);
    await checkPage(path);
  }
  async function checkPage(what: string) {
    assert.equal(await p.locator('body[data-ready]').count(), 0, `${what}: no script ran`);
    assert.deepEqual(await injected(p), [], `${what}: no injected element`);
  }
  /** Follows the link, waits for the page it leads to. */
  async function follow(link: ReturnType<Page['locator']>, url: string | RegExp) {
    await Promise.all([p.waitForURL(url), link.click()]);
    await checkPage(String(url));
  }
  /** What may go wrong with scripts off: Chromium refuses the modules the pages preload (as "csp"), and the
   * statuses asked for. */
  function problems(): string[] {
    return w
      .take()
      .filter(
        (x) => !/\/assets\/[\w.]+\.js csp$|^HTTP (404|410): GET |status of (404|410) \((Not Found|Gone)\)$/.test(x),
      );
  }

  test('the feed: its sorts, a tag, its next page; the cards link to uploads and to their authors', async () => {
    await visit('/');
    assert.equal(await p.locator('main h1').innerText(), 'Latest uploads');
    assert.equal(await p.locator('main .card').count(), 24);
    assert.ok((await mainText(p)).includes(HOSTILE), 'the hostile description is text on its card');
    assert.equal(
      await p.locator('link[rel="alternate"][type="application/atom+xml"]').getAttribute('href'),
      '/feed.atom?sort=new',
    );

    await follow(p.locator('main nav.sorts a', { hasText: 'Top' }), `${app.url}/?sort=top`);
    assert.equal(await p.locator('main nav.sorts a[aria-current="page"]').innerText(), 'Top');
    assert.equal(await p.locator('main .card').count(), 24);

    // The tag filter is a form: it works without a script.
    await p.locator('#tag-filter').fill(TAG);
    await Promise.all([p.waitForURL(`${app.url}/?tag=${TAG}&sort=top`), p.locator('form.tagfilter button').click()]);
    await visit(`/?tag=${TAG}`);
    assert.equal(await p.locator('main h1').innerText(), `Uploads tagged “${TAG}”`);
    assert.equal(await p.locator('main .card').count(), 24);
    const firstPage = await p.locator('main .card .title').allInnerTexts();
    const more = p.locator('main a.more');
    assert.equal(await more.isVisible(), true);
    await follow(more, /\/\?tag=nojs-cats&cursor=/);
    const rest = await p.locator('main .card .title').allInnerTexts();
    assert.equal(rest.length, 28 - 24);
    assert.deepEqual(
      rest.filter((t) => firstPage.includes(t)),
      [],
      'the next page shows the rest, none again',
    );
    assert.equal(await p.locator('main a.more').isVisible(), false, 'the last page');
    await follow(p.locator('main a', { hasText: '← Newest uploads' }), `${app.url}/?tag=${TAG}`);

    // A tag's address is the feed's.
    const tagged = await p.goto(`${app.url}/tags/${TAG}`, { waitUntil: 'load' });
    assert.equal(tagged?.request().redirectedFrom()?.url(), `${app.url}/tags/${TAG}`);
    assert.equal(p.url(), `${app.url}/?tag=${TAG}`);
    assert.equal(await p.locator('main .card').count(), 24);

    // A card leads to its upload; its author's name to their page.
    await follow(p.locator('main .card a.cardlink', { hasText: 'the song' }), `${app.url}/uploads/${linkId}`);
    await p.goBack();
    const by = p.locator('main .card .by a').first();
    assert.equal(await by.innerText(), owner.username);
    await follow(by, `${app.url}/u/${owner.username}`);
    assert.equal(await p.locator('main h1').innerText(), `Uploads by ${owner.username}`);
    assert.deepEqual(problems(), []);
  });

  test('an upload: the image with its hostile description and name as text; a link; a removed one (410)', async () => {
    await visit(`/uploads/${imageId}`);
    assert.equal(await p.locator('main .description').innerText(), HOSTILE);
    assert.equal(await p.locator('main figure img').getAttribute('alt'), HOSTILE);
    assert.ok((await p.locator('main figcaption').innerText()).startsWith(HOSTILE_NAME));
    assert.ok((await p.title()).startsWith('<script>alert(1)</script>'), await p.title());
    await follow(p.locator('main .tags a', { hasText: 'plain' }), `${app.url}/?tag=plain`);
    assert.equal(await p.locator('main .card').count(), 1);

    await visit(`/uploads/${linkId}`);
    assert.equal(await p.locator('main .media a').getAttribute('href'), 'https://www.youtube.com/watch?v=dQw4w9WgXcQ');
    assert.equal(await p.locator('main h1').innerText(), `Upload by ${owner.username}`);

    await visit(`/uploads/${removedId}`, 410);
    assert.equal(await p.locator('main h1').innerText(), 'This upload was removed');
    await visit(`/uploads/${crypto.randomUUID()}`, 404);
    assert.equal(await p.locator('main h1').innerText(), 'Upload not found');
    assert.deepEqual(problems(), []);
  });

  test("a user's page: their public uploads, sorts, the next page, the Atom feed; others are 404 pages", async () => {
    await visit(`/u/${owner.username}`);
    assert.equal(await p.title(), `Uploads by ${owner.username} · pixvote`);
    assert.equal(await p.locator('main h1').innerText(), `Uploads by ${owner.username}`);
    assert.equal(
      await p.locator('meta[name="description"]').getAttribute('content'),
      `Public uploads shared by ${owner.username} on pixvote: images and links, with everyone's votes.`,
    );
    assert.equal(
      await p.locator('link[rel="alternate"][type="application/atom+xml"]').getAttribute('href'),
      `/feed.atom?sort=new&user=${owner.username}`,
    );
    const cards = p.locator('main .card');
    assert.equal(await cards.count(), 24);
    assert.deepEqual(
      [...new Set(await p.locator('main .card .by').allInnerTexts())],
      [`by ${owner.username}`],
      'only their uploads',
    );
    assert.ok((await mainText(p)).includes(HOSTILE));
    assert.equal(await p.locator('main .card', { hasText: 'by the banned one' }).count(), 0);
    const firstPage = await p.locator('main .card .title').allInnerTexts();
    await follow(p.locator('main a.more'), new RegExp(`/u/${owner.username}\\?cursor=`));
    const rest = await p.locator('main .card .title').allInnerTexts();
    assert.equal(rest.length, ownerUploads - 24, 'the private upload is not listed');
    assert.deepEqual(
      rest.filter((t) => firstPage.includes(t)),
      [],
    );
    await follow(p.locator('main a', { hasText: '← Newest uploads' }), `${app.url}/u/${owner.username}`);
    await follow(p.locator('main nav.sorts a', { hasText: 'Best' }), `${app.url}/u/${owner.username}?sort=best`);
    assert.equal(await cards.count(), 24);
    // The filter stays on the user's page.
    await p.locator('#tag-filter').fill('plain');
    await Promise.all([
      p.waitForURL(`${app.url}/u/${owner.username}?tag=plain&sort=best`),
      p.locator('form.tagfilter button').click(),
    ]);
    assert.equal(await cards.count(), 1);
    assert.equal(await p.locator('main h1').innerText(), `Uploads by ${owner.username} tagged “plain”`);

    // The name in another case: the page's own address.
    const upper = await p.goto(`${app.url}/u/${owner.username.toUpperCase()}?sort=top`, { waitUntil: 'load' });
    assert.equal(upper?.status(), 200);
    assert.equal(p.url(), `${app.url}/u/${owner.username}?sort=top`);

    for (const path of [
      `/u/${banned.username}`,
      '/u/nobody_has_this_name',
      `/u/${encodeURIComponent(HOSTILE)}`,
      '/u/ab',
      '/no-such-page',
    ]) {
      await visit(path, 404);
      assert.equal(await p.locator('main h1').innerText(), 'Page not found', path);
      await follow(p.locator('main a', { hasText: 'Back to the feed' }), `${app.url}/`);
    }
    assert.deepEqual(problems(), []);
  });

  test('hostile strings in the URL stay text: a tag, a tag address', async () => {
    const slug = HOSTILE_TAG.replace(/ /g, '-');
    await visit(`/?tag=${encodeURIComponent(HOSTILE_TAG)}`);
    assert.equal(await p.locator('main h1').innerText(), `Uploads tagged “${slug}”`);
    assert.equal(await p.locator('#tag-filter').inputValue(), slug);
    assert.equal(await p.locator('main .status').innerText(), 'No uploads with this tag yet.');
    const r = await p.goto(`${app.url}/tags/${encodeURIComponent(HOSTILE_TAG)}`, { waitUntil: 'load' });
    assert.equal(r?.status(), 200);
    await checkPage('/tags/<hostile>');
    assert.equal(await p.locator('main h1').innerText(), `Uploads tagged “${slug}”`);
    assert.deepEqual(problems(), []);
  });

  test('the modlog: a page of entries, its older entries, targets linked or not named', async () => {
    await visit('/modlog');
    assert.equal(await p.locator('main h1').innerText(), 'Moderation log');
    const rows = p.locator('table.modlog tbody tr');
    assert.equal(await rows.count(), 50);
    assert.equal(await p.locator('table.modlog th').count(), 4, 'no moderator column for the public');
    // The newest first: the ban, with its hostile reason as text.
    assert.match(await rows.first().innerText(), new RegExp(`ban\\s+user ${banned.username}`));
    assert.ok((await rows.first().innerText()).includes(HOSTILE));
    const secret = rows.filter({ hasText: 'private one' });
    assert.match(await secret.innerText(), /an upload \(not public\)/);
    assert.equal(await secret.locator('a').count(), 0);
    assert.equal(await p.locator(`a[href="/uploads/${privateId}"]`).count(), 0);
    assert.match(await rows.first().locator('time').innerText(), /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    // Words stay whole at 375 px: the table scrolls in its box, the page does not.
    assert.equal(await p.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'), 0);
    const newest = await rows.allInnerTexts();

    await follow(p.locator('main a', { hasText: 'Older entries →' }), /\/modlog\?cursor=/);
    const older = await p.locator('table.modlog tbody tr').allInnerTexts();
    assert.ok(older.length >= 4, `${older.length} older entries`);
    assert.deepEqual(
      older.filter((t) => newest.includes(t)),
      [],
    );
    assert.match(older.at(-1) ?? '', /hold\s+an upload\s+checking 0/, 'the oldest entry last');
    await follow(p.locator('main a', { hasText: '← Newest entries' }), `${app.url}/modlog`);

    // The removed upload's line links to its page: 410.
    const removed = p.locator('table.modlog tbody tr', { hasText: 'remove' }).locator('a');
    assert.equal(await removed.getAttribute('href'), `/uploads/${removedId}`);
    const [gone] = await Promise.all([p.waitForResponse(`${app.url}/uploads/${removedId}`), removed.click()]);
    assert.equal(gone.status(), 410);
    await p.waitForURL(`${app.url}/uploads/${removedId}`);
    await checkPage('the removed upload');

    // A malformed cursor: a 400 page, not a 500.
    const bad = await p.goto(`${app.url}/modlog?cursor=nonsense`, { waitUntil: 'load' });
    assert.equal(bad?.status(), 400);
    assert.match(await p.locator('main').innerText(), /cursor/);
    w.take();
  });

  test('an admin reads the moderators in the log', async () => {
    const mine = await browser.newContext({ javaScriptEnabled: false });
    await mine.addCookies([{ name: 'auth-token', value: admin.token, url: app.url }]);
    const page = await mine.newPage();
    await page.goto(`${app.url}/modlog`, { waitUntil: 'load' });
    assert.equal(await page.locator('table.modlog th').count(), 5);
    assert.match(await page.locator('table.modlog tbody tr').first().innerText(), new RegExp(admin.username));
    assert.equal(await page.locator(`table.modlog a[href="/uploads/${privateId}"]`).count(), 1, 'admins see every id');
    await mine.close();
  });
});

describe('with JavaScript on', { skip: noBrowser }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser?.close());

  test("a user's page scrolls on to its next page and votes, as the feed does", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const voter = await registerUser(app.api);
    await context.addCookies([{ name: 'auth-token', value: voter.token, url: app.url }]);
    const w = await watchedPage(context, app.url);
    const p = w.page;
    await openPage(p, `${app.url}/u/${owner.username}`);
    assert.equal(await p.locator('main .card').count(), 24);
    assert.equal(await p.locator('main h1').innerText(), `Uploads by ${owner.username}`);
    const card = p.locator('main .card').first();
    await card.locator('button.vote.fucks').click();
    await p.waitForFunction(() => {
      const b = (globalThis as any).document.querySelector('main .card button.vote.fucks');
      return b?.getAttribute('aria-pressed') === 'true' && b.querySelector('.n-up')?.textContent === '1';
    });
    await p.locator('main a.more').scrollIntoViewIfNeeded();
    await p.waitForURL(new RegExp(`/u/${owner.username}\\?cursor=`));
    await p.waitForFunction(
      (n) => (globalThis as any).document.querySelectorAll('main .card').length === n,
      ownerUploads,
    );
    assert.equal(await p.locator('main a.more').isHidden(), true);
    assert.deepEqual([...new Set(await p.locator('main .card .by').allInnerTexts())], [`by ${owner.username}`]);
    assert.deepEqual(w.take(), []);
    await context.close();
  });

  test('the modlog loads its older entries in place', async () => {
    const context = await browser.newContext();
    const w = await watchedPage(context, app.url);
    const p = w.page;
    await openPage(p, `${app.url}/modlog`);
    const rows = p.locator('table.modlog tbody tr');
    assert.equal(await rows.count(), 50);
    const next = (await app.api.get('/api/modlog?limit=50')).body.next_cursor as string;
    const total = 50 + ((await app.api.get(`/api/modlog?limit=50&cursor=${next}`)).body.entries.length as number);
    await p.locator('main a.older').click();
    await p.waitForURL(/\/modlog\?cursor=/);
    await p.waitForFunction(
      (n) => (globalThis as any).document.querySelectorAll('table.modlog tbody tr').length === n,
      total,
    );
    assert.equal(await p.locator('main a.older').count(), 0, 'no older entries left');
    assert.match((await rows.last().innerText()) ?? '', /hold\s+an upload\s+checking 0/);
    assert.deepEqual(w.take(), []);
    await context.close();
  });
});

test('the new page routes: GET and HEAD only (405 otherwise), within 100 KB, JSON 404 for programs', async () => {
  for (const path of [`/u/${owner.username}`, '/modlog']) {
    const r = await app.api.post(path, {}, { unchecked: 'a page route' });
    assert.equal(r.status, 405, path);
    assert.equal(r.body.error, 'method_not_allowed');
    assert.match(r.headers.get('allow') ?? '', /GET/);
    const head = await fetch(app.url + path, { method: 'HEAD', headers: { accept: 'text/html' } });
    assert.equal(head.status, 200, path);
    const page = await fetch(app.url + path, { headers: { accept: 'text/html', 'accept-encoding': 'br' } });
    assert.equal(page.headers.get('content-encoding'), 'br');
    const html = await page.text();
    assert.ok(html.length < 100_000, `${path}: ${html.length} bytes of HTML`);
    // (Handlers: the browser tests above look for them in the DOM; here the hostile text would match.)
    assert.doesNotMatch(html, /<style|\sstyle=|<script>/i, `${path}: no inline script or style`);
  }
  // A cursor the listing does not take: 400, an HTML page saying why to a browser, the contract's body to a program.
  const bad = await app.api.get(`/u/${owner.username}?cursor=nonsense`, { unchecked: 'a page route' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error, 'invalid_cursor');
  const badPage = await fetch(`${app.url}/u/${owner.username}?cursor=nonsense`, { headers: { accept: 'text/html' } });
  assert.equal(badPage.status, 400);
  assert.match(await badPage.text(), /<p class="alert error">[^<]*cursor/);
  // A program asking for an unknown user's page gets the contract's body.
  const missing = await app.api.get('/u/nobody_has_this_name', { unchecked: 'a page route' });
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error, 'not_found');
});

test('a feed page whose tag holds a NUL: the page, without its first feed page; never a 500', async () => {
  // Found by test/http/api-fuzz.test.ts on PostgreSQL (which cannot hold U+0000 in text): the page's own parse of
  // its query skipped the NUL rule that GET /api/uploads applies, and the tag reached the database.
  for (const path of ['/?tag=%00', '/?tag=a%00b&sort=top', '/tags/a%00']) {
    const r = await fetch(app.url + path, { headers: { accept: 'text/html' } });
    assert.equal(r.status, 200, `${path}: ${r.status}`);
    assert.match(await r.text(), /^<!doctype html>/i);
  }
  const api = await app.api.get('/api/uploads?tag=a%00b');
  assert.equal(api.status, 400);
  assert.match(api.body.message, /^tag contains a NUL/);
});
