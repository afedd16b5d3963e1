/**
 * The pages' views (issue 47, src/gateway/views/) in the browser: the tree a view makes, built as DOM by the served
 * web/lib/dom.js (`toDom`), is the DOM the browser parses from the server's markup of the same tree
 * (src/gateway/web-render.ts, `toHtml`), hostile text included; and the feed's and the modlog's modules adopt the
 * server's page as it is, or build the same page from the same view when the document comes without it.
 * The server's markup itself: test/unit/web-views.test.ts.
 */
import { FEED_PAGE_SIZE } from '../../src/gateway/web-limits.ts';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { cardView, type Upload } from '../../src/gateway/views/card-view.ts';
import { feedView } from '../../src/gateway/views/feed-view.ts';
import { modlogView } from '../../src/gateway/views/modlog-view.ts';
import type { VNode } from '../../src/gateway/views/vnode.ts';
import { webAssetsReady } from '../../src/gateway/web-assets.ts';
import { toHtml } from '../../src/gateway/web-render.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, openPage, watchedPage, type WatchedPage } from '../support/browser.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadFields, uploadImage } from '../support/uploads.ts';
import { registerAdmin, registerUser } from '../support/users.ts';
import { HOSTILE, VIEW_UPLOAD } from '../support/view-fixtures.ts';

let app: TestApp;
let browser: Browser;
let context: BrowserContext;
let w: WatchedPage;
let page: Page;
before(async () => {
  app = await startApp();
  if (noBrowser) return;
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  w = await watchedPage(context, app.url);
  page = w.page;
  // Counts the grids taken out of the document: adopting the server's grid removes none.
  await page.addInitScript(
    'window.__gridsRemoved = 0; new MutationObserver((records) => { for (const r of records) for (const n of ' +
      "r.removedNodes) if (n.nodeType === 1 && n.matches('ol.grid')) window.__gridsRemoved++; })" +
      '.observe(document, { childList: true, subtree: true });',
  );
});
after(async () => {
  await browser?.close();
  await app.close();
});
const opts = { skip: noBrowser };

/** A card's age, or a modlog line's time (UTC, the same on both sides). */
const AGE = /^(just now|\d+ (minute|hour|day|month|year)s? ago|\d{4}-\d\d-\d\d \d\d:\d\d UTC)$/;

/**
 * The cards' ages ("3 minutes ago") checked, then left out: told from the time each side renders, they may
 * differ by a minute between the server's page and the module's.
 */
function untimed(html: string): string {
  return html.replace(/(<time [^>]*>)([^<]*)(<\/time>)/g, (_, open: string, age: string, close: string) => {
    assert.match(age, AGE);
    return `${open}…${close}`;
  });
}

/** `<main>`'s content as the browser parses `html` (no script runs), placeholders' inline styles apart. */
async function parsedMain(p: Page, html: string): Promise<string> {
  return untimed(
    await p.evaluate((source: string) => {
      const doc = new (globalThis as any).DOMParser().parseFromString(source, 'text/html');
      return doc.getElementById('main').innerHTML as string;
    }, html),
  );
}

/** `<main>`'s content in the live page, without the ThumbHash placeholders (inline styles set by script). */
async function liveMain(p: Page): Promise<string> {
  return untimed(
    await p.evaluate(() => {
      const main = (globalThis as any).document.getElementById('main').cloneNode(true);
      for (const el of main.querySelectorAll('[style]')) el.removeAttribute('style');
      return main.innerHTML as string;
    }),
  );
}

test(
  'feed.js adopts the feed the server renders, and builds the same page from the same view without it',
  opts,
  async () => {
    const owner = await registerUser(app.api);
    for (let i = 0; i < 27; i++) {
      const r =
        i % 9 === 4
          ? await uploadFields(app.api, owner.token, {
              upload_type: 'link',
              external_url:
                i === 4 ? 'https://www.youtube.com/watch?v=dQw4w9WgXcQ' : `https://example.com/${i}?a=1&b="2"`,
              ...(i === 13 ? {} : { description: `${HOSTILE} link ${i}` }),
              tags: 'render, links',
            })
          : await uploadImage(
              app.api,
              owner.token,
              await pngImage(300 + i * 17, 200 + (i % 5) * 90, 700 + i),
              i % 3 === 0
                ? { tags: 'render' }
                : { description: `${HOSTILE} ${'long '.repeat(i * 2)}${i}`, tags: 'render, Hostile Tag' },
              `${HOSTILE}-${i}.png`,
            );
      assert.equal(r.status, 201, r.text);
    }

    const next = (await app.api.get(`/api/uploads?limit=${FEED_PAGE_SIZE}&sort=new&tag=render`)).body.next_cursor;
    assert.ok(next);
    const paths = [
      '/?tag=render',
      '/?tag=render&page=2',
      `/?tag=render&cursor=${next}`,
      '/?sort=top&tag=links',
      '/?tag=nothing-has-this',
      '/?page=9',
      // A user's page is the feed of their uploads (issue 30).
      `/u/${owner.username}`,
      `/u/${owner.username}?sort=top&tag=links`,
    ];
    // Signed out (counts as text), then signed in (vote buttons) on the first two.
    const visits = [
      ...paths.map((path) => [path, null] as const),
      ...paths.slice(0, 2).map((p) => [p, owner] as const),
    ];
    for (const [path, visitor] of visits) {
      if (visitor) await context.addCookies([{ name: 'auth-token', value: visitor.token, url: app.url }]);
      const html = (
        await app.api.get(path, { unchecked: 'an HTML page', ...(visitor ? { token: visitor.token } : {}) })
      ).text;
      assert.equal(html.includes('<button type="button" class="vote fucks"'), Boolean(visitor), `${path}: votes`);
      assert.match(html, /<ol class="grid" aria-label="Uploads">/, `${path}: the server rendered the feed`);
      assert.doesNotMatch(html, /<b id="injected">/, `${path}: user text is escaped`);
      const served = await parsedMain(page, html);
      assert.ok(!served.includes('<noscript>'));

      // Adopted: the page the server rendered is the page once feed.js has run.
      await openPage(page, app.url + path);
      assert.equal(await liveMain(page), served, `${path}: feed.js keeps the server's page as it is`);
      assert.equal(await page.evaluate('window.__gridsRemoved'), 0, `${path}: the server's grid is adopted`);

      // Built by the module alone (the document without the server's <main> content, the same embedded page).
      await page.route(app.url + path, (route) =>
        route.fulfill({
          status: 200,
          headers: { 'content-type': 'text/html; charset=utf-8' },
          body: html.replace(/<main id="main" tabindex="-1">[\s\S]*<\/main>/, '<main id="main" tabindex="-1"></main>'),
        }),
      );
      await openPage(page, app.url + path);
      await page.unroute(app.url + path);
      assert.equal(await liveMain(page), served, `${path}: feed.js builds the same page`);
    }
    await context.clearCookies();
    assert.deepEqual(w.take(), [], 'no failed or foreign request, no CSP violation');

    // Adopted, the page still scrolls on: the next page is appended, with its own URL.
    await openPage(page, `${app.url}/?tag=render`);
    assert.equal(await page.locator('.card').count(), 24);
    await page.locator('a.more').scrollIntoViewIfNeeded();
    await page.waitForURL(`${app.url}/?tag=render&cursor=${next}`);
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('.card').length === 27);
    assert.equal(await page.locator('a.more').isHidden(), true);
    assert.equal(await page.locator('.status').innerText(), '');
    assert.deepEqual(w.take(), []);
  },
);

test("a view's tree built by the browser is the DOM it parses from the server's markup of it", opts, async () => {
  const base: Upload = { ...VIEW_UPLOAD, created_at: '2020-02-29T23:59:59.999Z' };
  const uploads: Upload[] = [
    base,
    { ...base, description: HOSTILE, original_name: 'x.png', is_private: true, moderation: 'held' },
    { ...base, original_name: `${HOSTILE}.png`, moderation: 'visible', image: { ...base.image!, width: 0, height: 0 } },
    { ...base, description: 'é'.repeat(95), tags: [{ name: HOSTILE, slug: 'a b&c' }] },
    { ...base, upload_type: 'link', image: null, external_url: 'https://example.com:8080/x', embed: null },
    { ...base, upload_type: 'link', image: null, external_url: 'not a url', moderation: `${HOSTILE}` },
    {
      ...base,
      upload_type: 'link',
      image: null,
      external_url: 'https://x.test/',
      embed: { provider: HOSTILE, embed_url: null },
    },
    { ...base, upload_type: 'image', image: null, original_name: 'lost.png', my_vote: 'fucks' },
    { ...base, created_at: 'not a date', my_vote: 'does_not_fuck' },
  ];
  const now = Date.now();
  const trees: VNode[] = [];
  for (const signedIn of [false, true]) {
    for (const eager of [true, false]) trees.push(...uploads.map((u) => cardView(u, eager, { signedIn, now })));
    const feed = {
      sort: 'top',
      tag: HOSTILE,
      user: HOSTILE,
      page: 2,
      cursor: null,
      uploads,
      hasMore: signedIn,
      nextCursor: signedIn ? 'a&"b' : null,
      signedIn,
      now,
      maxTagLength: 40,
      eagerThumbnails: 3,
    };
    trees.push(...feedView(feed), ...feedView({ ...feed, sort: 'new', tag: '', user: '', uploads: [], cursor: 'c' }));
  }
  const entries = [
    { at: '2026-11-27T09:30:00.000Z', action: 'hold', reason: HOSTILE, target: { type: 'upload', id: 'x/y' } },
    { at: 'x', action: 'ban_user', reason: null, target: { type: 'user', id: 'u', name: HOSTILE } },
    { at: 'y', action: 'block', reason: '', target: { type: 'blocklist', id: null, name: HOSTILE } },
    { at: 'z', action: 'vote_ring', reason: null, target: { type: 'vote_ring', id: null } },
  ];
  trees.push(...modlogView({ entries, page: 3, cursor: null, nextCursor: 'n' }));
  trees.push(
    ...modlogView({ entries: entries.map((e) => ({ ...e, moderator: null })), page: 1, cursor: 'c', nextCursor: null }),
  );

  await openPage(page, `${app.url}/`);
  // web/lib/dom.js, served on its own (the pages run it from their bundles).
  const domModule = (await webAssetsReady()).module('dom.js')?.path;
  assert.ok(domModule, 'web/lib/dom.js is served');
  const built: string[] = await page.evaluate(
    async ([url, list]) => {
      const { toDom } = await import(url);
      return list.map((tree: unknown) => toDom(tree).outerHTML as string);
    },
    [domModule, trees] as const,
  );
  const parsed: string[] = await page.evaluate(
    (list: string[]) => {
      const parse = (html: string) => new (globalThis as any).DOMParser().parseFromString(html, 'text/html');
      // A row parses only inside its table, a card inside its list.
      return list.map((html) => {
        const [open, close] = html.startsWith('<tr')
          ? ['<table><tbody>', '</tbody></table>']
          : html.startsWith('<li')
            ? ['<ol>', '</ol>']
            : ['<div>', '</div>'];
        const body = parse(`${open}${html}${close}`).body;
        return (body.querySelector('tbody, ol, div') ?? body).firstElementChild.outerHTML as string;
      });
    },
    trees.map((t) => toHtml(t)),
  );
  assert.equal(built.length, trees.length);
  assert.deepEqual(parsed, built);
  assert.ok(
    built.every((html) => !html.includes('<b id="injected">')),
    'user text is text on both sides',
  );
  assert.equal(built.filter((c) => c.startsWith('<li class="card">') && c.includes('class="vote ')).length, 18);
  // The modules served one by one import the generated views by their hashed paths.
  const cards = (await app.api.get((await webAssetsReady()).module('cards.js')!.path, { unchecked: 'a module' })).text;
  assert.ok(cards.includes(`from '${(await webAssetsReady()).module('card-view.js')!.path}'`), cards.slice(0, 400));
  // The made-up thumbnails' 404s: their requests end with the document that made them (on a slow machine a 404
  // could otherwise arrive during the next test), and leaving it aborts what is still on its way (ERR_ABORTED).
  await page.goto('about:blank');
  w.take();
});

test(
  "modlog.js adopts the server's modlog, and builds the same page without it, for the public and admins",
  opts,
  async () => {
    const admin = await registerAdmin(app);
    const owner = await registerUser(app.api);
    const moderate = async (id: string, action: string, reason: string) => {
      const r = await app.api.post(`/api/admin/uploads/${id}/moderation`, { action, reason }, { token: admin.token });
      assert.equal(r.status, 200, r.text);
    };
    const shown = await uploadFields(app.api, owner.token, {
      upload_type: 'link',
      external_url: 'https://example.com/m',
    });
    assert.equal(shown.status, 201, shown.text);
    await moderate(shown.body.id, 'hold', HOSTILE);
    await moderate(shown.body.id, 'approve', '');
    const secret = await uploadImage(app.api, owner.token, await pngImage(200, 100, 901), { is_private: 'true' });
    assert.equal(secret.status, 201, secret.text);
    await moderate(secret.body.id, 'hold', 'private');
    const sha = 'ab'.repeat(32);
    const block = await app.api.post(
      '/api/admin/blocklist',
      { entries: [{ sha256: sha, reason: HOSTILE }] },
      { token: admin.token },
    );
    assert.equal(block.status, 200, block.text);
    const ban = { reason: HOSTILE, until: null, remove_uploads: false };
    assert.equal((await app.api.post(`/api/admin/users/${owner.id}/ban`, ban, { token: admin.token })).status, 200);
    assert.equal((await app.api.del(`/api/admin/users/${owner.id}/ban`, { token: admin.token })).status, 200);

    for (const visitor of [null, admin]) {
      if (visitor) await context.addCookies([{ name: 'auth-token', value: visitor.token, url: app.url }]);
      const html = (
        await app.api.get('/modlog', { unchecked: 'an HTML page', ...(visitor ? { token: visitor.token } : {}) })
      ).text;
      assert.match(html, /<table class="modlog">/);
      assert.equal(html.includes('<th scope="col">Moderator</th>'), Boolean(visitor));
      assert.doesNotMatch(html, /<b id="injected">/, 'user text is escaped');
      const served = await parsedMain(page, html);
      await openPage(page, `${app.url}/modlog`);
      assert.equal(await liveMain(page), served, "modlog.js keeps the server's page as it is");
      await page.route(`${app.url}/modlog`, (route) =>
        route.fulfill({
          status: 200,
          headers: { 'content-type': 'text/html; charset=utf-8' },
          body: html.replace(/<main id="main" tabindex="-1">[\s\S]*<\/main>/, '<main id="main" tabindex="-1"></main>'),
        }),
      );
      await openPage(page, `${app.url}/modlog`);
      await page.unroute(`${app.url}/modlog`);
      assert.equal(await liveMain(page), served, 'modlog.js builds the same page');
    }
    await context.clearCookies();
    assert.deepEqual(w.take(), []);
  },
);
