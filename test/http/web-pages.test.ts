/**
 * The web front end in a real browser (issue 20), against the real server: sign up, sign in and out, upload a
 * file, find it in the feed, vote, change privacy, delete, create and revoke an API token, report, and as an
 * admin hold and remove. Sign-up, sign-in, upload and vote are done by keyboard alone. On every page nothing
 * goes to another origin, no request fails and the console stays clean.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, openPage, watchedPage, type WatchedPage } from '../support/browser.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadFields, uploadImage } from '../support/uploads.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';

let app: TestApp;
let browser: Browser;
let context: BrowserContext;
let w: WatchedPage;
let page: Page;
const suffix = Math.random().toString(36).slice(2, 8);
const me = { username: `web_${suffix}`, email: `web_${suffix}@example.test`, password: 'correct horse battery' };
let myToken = '';
let uploadId = '';

/** Presses Tab until `selector` has the focus (as a keyboard user would), at most 60 times. */
async function tabTo(p: Page, selector: string): Promise<void> {
  for (let i = 0; i < 60; i++) {
    if (await p.evaluate(`document.activeElement?.matches(${JSON.stringify(selector)}) ?? false`)) return;
    await p.keyboard.press('Tab');
  }
  assert.fail(`Tab never reached ${selector}`);
}

function clean(label: string) {
  assert.deepEqual(w.take(), [], `${label}: no foreign or failed request, no console error`);
}

async function cookieToken(): Promise<string> {
  const c = (await context.cookies()).find((k) => k.name === 'auth-token');
  assert.ok(c, 'the auth-token cookie is set');
  return c.value;
}

async function asUser(user: TestUser): Promise<{ ctx: BrowserContext; w: WatchedPage }> {
  const ctx = await browser.newContext();
  await ctx.addCookies([{ name: 'auth-token', value: user.token, url: app.url }]);
  return { ctx, w: await watchedPage(ctx, app.url) };
}

before(async () => {
  app = await startApp();
  if (noBrowser) return;
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url });
  w = await watchedPage(context, app.url);
  page = w.page;
  // A listener turns file-chooser interception on, but without a reply: one added together with the key press
  // can lose the race, and Chromium then opens (and headless, drops) its own dialog. Turn it on now, for good.
  page.on('filechooser', () => {});
});
after(async () => {
  await browser?.close();
  await app.close();
});

const opts = { skip: noBrowser };

test('sign up by keyboard alone, then sign out and sign in again by keyboard', opts, async () => {
  await openPage(page, `${app.url}/signup`);
  // The page puts the focus in its first field.
  await page.keyboard.type(me.username);
  await page.keyboard.press('Tab');
  await page.keyboard.type(me.email);
  await page.keyboard.press('Tab');
  await page.keyboard.type(me.password);
  await Promise.all([page.waitForURL(`${app.url}/`), page.keyboard.press('Enter')]);
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.locator('header nav a[href="/profile"]').innerText(), me.username);
  clean('sign up');

  await tabTo(page, '#signout');
  await Promise.all([page.waitForURL(`${app.url}/`), page.keyboard.press('Enter')]);
  await page.waitForSelector('header nav a[href="/signin"]');
  assert.equal(await cookieToken().catch(() => ''), '', 'signing out clears the cookie');

  await openPage(page, `${app.url}/signin?next=/new`);
  await page.keyboard.type(me.username.toUpperCase()); // usernames match case-insensitively
  await page.keyboard.press('Tab');
  await page.keyboard.type('not the password');
  await page.keyboard.press('Enter');
  await page.locator('.alert.error').waitFor();
  assert.equal(await page.locator('.alert.error').innerText(), 'Wrong email, username or password.');
  assert.deepEqual(
    w.take().map((p) => p.replace(/\d+/g, 'N')),
    [
      `HTTP N: POST ${app.url.replace(/\d+/g, 'N')}/api/auth`,
      'console error: Failed to load resource: the server responded with a status of N (Unauthorized)',
    ],
    'the refused sign-in is the only failed request',
  );
  await page.fill('#password', '');
  await page.focus('#password');
  await page.keyboard.type(me.password);
  await Promise.all([page.waitForURL(`${app.url}/new`), page.keyboard.press('Enter')]);
  await page.waitForSelector('body[data-ready="true"]');
  myToken = await cookieToken();
  clean('sign in');
});

test('upload a file by keyboard alone: preview, limits as you type, then the upload page', opts, async () => {
  await openPage(page, `${app.url}/new`);
  const png = await pngImage(480, 360, 41);
  await tabTo(page, '#file');
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.keyboard.press('Space')]);
  await chooser.setFiles({ name: 'kitten.png', mimeType: 'image/png', buffer: png });
  await page.locator('img.preview:not([hidden])').waitFor();
  assert.match(await page.locator('.drop .hint').innerText(), /kitten\.png/);
  await tabTo(page, '#description');
  await page.keyboard.type('A kitten made of shapes');
  assert.equal(await page.locator('#description-count').innerText(), '23 / 500');
  await tabTo(page, '#tags');
  await page.keyboard.type('shapes, kitten');
  assert.equal(await page.locator('#tags-count').innerText(), '2 / 10 tags');
  await tabTo(page, 'form.new button[type="submit"]');
  await Promise.all([page.waitForURL(/\/uploads\/[0-9a-f-]{36}$/), page.keyboard.press('Enter')]);
  await page.waitForSelector('body[data-ready="true"]');
  uploadId = page.url().split('/').pop()!;
  assert.equal(await page.locator('.description').innerText(), 'A kitten made of shapes');
  const img = page.locator('figure.media img');
  assert.equal(await img.getAttribute('src'), `/api/image/${uploadId}?size=medium`);
  // The medium variant arrives (any failure would be recorded as a failed request).
  await page.waitForFunction(() => (globalThis as any).document.querySelector('figure.media img').naturalWidth > 0);
  clean('upload');

  // The same file again: the duplicate notice links to the existing upload.
  await openPage(page, `${app.url}/new`);
  // Dropped on the drop zone this time (drag and drop), then sent.
  const dropped = await page.evaluateHandle(
    (bytes: number[]) => {
      const g = globalThis as any;
      const transfer = new g.DataTransfer();
      transfer.items.add(new g.File([new Uint8Array(bytes)], 'again.png', { type: 'image/png' }));
      return transfer;
    },
    [...png],
  );
  await page.dispatchEvent('.drop', 'drop', { dataTransfer: dropped });
  await page.locator('.drop .hint', { hasText: 'again.png' }).waitFor();
  // The preview shows once the browser has decoded the dropped file's blob: wait for it, do not sample it.
  await page.locator('img.preview').waitFor({ state: 'visible' });
  await page.click('form.new button[type="submit"]');
  const link = page.locator('.alert.info a');
  await link.waitFor();
  assert.equal(await link.getAttribute('href'), `/uploads/${uploadId}`);
  clean('duplicate');
});

test('upload form: a link, limits as you type, and each refusal in plain words', opts, async () => {
  await openPage(page, `${app.url}/new`);
  await page.check('input[name="kind"][value="link"]');
  assert.equal(await page.locator('#file').isVisible(), false);
  await page.fill('#external_url', 'https://www.youtube.com/watch?v=dQw4w9WgXcQ');
  // Characters as the API counts them: 500 cats are 1 000 UTF-16 units, and within the limit.
  await page.fill('#description', '🐈'.repeat(500));
  assert.equal(await page.locator('#description-count').innerText(), '500 / 500');
  assert.doesNotMatch((await page.locator('#description-count').getAttribute('class')) ?? '', /over/);
  await page.fill('#description', 'x'.repeat(501));
  assert.equal(await page.locator('#description-count').innerText(), '501 / 500');
  assert.match((await page.locator('#description-count').getAttribute('class')) ?? '', /over/);
  await page.fill('#tags', `a, b, c, d, e, f, g, h, i, j, k`);
  assert.equal(await page.locator('#tags-count').innerText(), '11 / 10 tags');
  // The API's own refusal names the limit.
  await page.click('form.new button[type="submit"]');
  await page.locator('.alert.error').waitFor();
  assert.match(await page.locator('.alert.error').innerText(), /500/);
  w.take(); // the 400 that was just provoked
  await page.fill('#description', 'a song');
  await page.fill('#tags', 'music');
  await Promise.all([page.waitForURL(/\/uploads\/[0-9a-f-]{36}$/), page.click('form.new button[type="submit"]')]);
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.locator('.media.link a').getAttribute('href'), 'https://www.youtube.com/watch?v=dQw4w9WgXcQ');
  assert.equal(await page.locator('iframe').count(), 0, 'no third-party frame until asked');
  clean('link upload');

  // A file over 10 MB is refused before it is sent.
  await openPage(page, `${app.url}/new`);
  await page.setInputFiles('#file', {
    name: 'huge.png',
    mimeType: 'image/png',
    buffer: Buffer.alloc(10 * 1024 * 1024 + 1),
  });
  await page.click('form.new button[type="submit"]');
  assert.equal(await page.locator('.alert.error').innerText(), 'The file is too large: images can be at most 10 MB.');
  clean('too large, refused in the page');

  // The refusals that need a person in a photo or a spent quota to happen: the API's answers, replayed.
  const png = await pngImage(64, 64, 9);
  const cases: Array<[number, string, Record<string, string>, RegExp]> = [
    [400, 'human_detected', {}, /seems to show a person/],
    [400, 'blocked_content', {}, /blocked by the moderators/],
    [413, 'payload_too_large', {}, /too large: images can be at most 10 MB/],
    [429, 'rate_limited', { 'retry-after': '150' }, /wait 3 minutes/],
    [503, 'busy', { 'retry-after': '5' }, /busy right now\. Please try again in 5 seconds/],
  ];
  for (const [status, error, headers, words] of cases) {
    await page.route('**/api/v1/upload', (route) =>
      route.fulfill({
        status,
        headers,
        contentType: 'application/json',
        body: JSON.stringify({ error, message: 'from the API' }),
      }),
    );
    await page.setInputFiles('#file', { name: 'x.png', mimeType: 'image/png', buffer: png });
    await page.click('form.new button[type="submit"]');
    await page.locator('.alert.error', { hasText: words }).waitFor();
    await page.unroute('**/api/v1/upload');
  }
  w.take(); // the replayed refusals
});

test('the upload is in the feed with its thumbnail, counts and tags; the tag filter finds it', opts, async () => {
  await openPage(page, `${app.url}/`);
  const card = page.locator('.card', { hasText: 'A kitten made of shapes' });
  await card.waitFor();
  const thumb = card.locator('img');
  assert.equal(await thumb.getAttribute('src'), `/api/image/${uploadId}?size=thumb`);
  await page.waitForFunction(() =>
    [...(globalThis as any).document.querySelectorAll('.card img')].every((i: any) => i.complete && i.naturalWidth > 0),
  );
  assert.match(await card.locator('.meta').innerText(), /▲ 0/);
  assert.deepEqual((await card.locator('.tags a').allInnerTexts()).sort(), ['kitten', 'shapes']);
  clean('feed');

  for (const sort of ['top', 'hot', 'best']) {
    await page.click(`.sorts a:text-is("${sort[0]!.toUpperCase()}${sort.slice(1)}")`);
    await page.waitForURL(`${app.url}/?sort=${sort}`);
    await page.waitForSelector('body[data-ready="true"]');
    await card.waitFor();
    assert.equal(
      await page.locator('.sorts a[aria-current="page"]').innerText(),
      sort[0]!.toUpperCase() + sort.slice(1),
    );
  }
  await card.locator('.tags a', { hasText: 'kitten' }).click();
  await page.waitForURL(`${app.url}/?tag=kitten`);
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.locator('.card').count(), 1);
  await openPage(page, `${app.url}/?tag=nothing-has-this`);
  assert.equal(await page.locator('.status').innerText(), 'No uploads with this tag yet.');
  clean('sorts and tags');
});

test('vote by keyboard: the buttons show my vote, the counts follow, pressing again retracts', opts, async () => {
  await openPage(page, `${app.url}/uploads/${uploadId}`);
  const up = page.locator('button.vote.fucks');
  assert.equal(await up.getAttribute('aria-pressed'), 'false');
  await tabTo(page, 'button.vote.fucks');
  await page.keyboard.press('Enter');
  await page.waitForSelector('button.vote.fucks[aria-pressed="true"]');
  assert.equal(await page.locator('.counts .n-up').innerText(), '1');
  // Reloaded, the page shows the vote it got from the API (my_vote).
  await openPage(page, `${app.url}/uploads/${uploadId}`);
  assert.equal(await up.getAttribute('aria-pressed'), 'true');
  await tabTo(page, 'button.vote.does_not_fuck');
  await page.keyboard.press('Enter');
  await page.waitForSelector('button.vote.does_not_fuck[aria-pressed="true"]');
  assert.equal(await up.getAttribute('aria-pressed'), 'false');
  assert.equal(await page.locator('.counts .n-down').innerText(), '1');
  assert.equal(await page.locator('.counts .n-up').innerText(), '0');
  await page.keyboard.press('Enter'); // pressing the pressed one retracts
  await page.waitForSelector('button.vote.does_not_fuck[aria-pressed="false"]');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Enter');
  await page.waitForSelector('button.vote.fucks[aria-pressed="true"]');
  const r = await app.api.get(`/api/upload/${uploadId}`, { token: myToken });
  assert.equal(r.body.my_vote, 'fucks');
  assert.equal(r.body.upvotes, 1);
  assert.equal(r.body.downvote_count, 0);
  clean('vote');
});

test(
  'owner: privacy toggle takes it out of the feed and marks it in the profile; tags can be added',
  opts,
  async () => {
    await openPage(page, `${app.url}/uploads/${uploadId}`);
    await page.click('#private');
    await page.locator('.alert.ok', { hasText: 'Now private' }).waitFor();
    assert.equal((await app.api.get(`/api/upload/${uploadId}`)).body.is_private, true);
    const feed = await app.api.get('/api/uploads');
    assert.ok(!feed.body.uploads.some((u: any) => u.id === uploadId), 'a private upload is out of the feed');

    await page.fill('#add-tags', 'Orange, round');
    await page.click('.owner form button[type="submit"]');
    await page.locator('.alert.ok', { hasText: 'Tags added' }).waitFor();
    assert.deepEqual((await page.locator('.tagbox .tags a').allInnerTexts()).sort(), [
      'kitten',
      'orange',
      'round',
      'shapes',
    ]);

    await openPage(page, `${app.url}/profile`);
    const card = page.locator('.card', { hasText: 'A kitten made of shapes' });
    assert.match(await card.locator('.meta').innerText(), /Private/);
    clean('privacy');

    await openPage(page, `${app.url}/uploads/${uploadId}`);
    await page.click('#private');
    await page.locator('.alert.ok', { hasText: 'Now public' }).waitFor();
    assert.equal((await app.api.get(`/api/upload/${uploadId}`)).body.is_private, false);
    clean('public again');
  },
);

test('API tokens: create (shown once, copied), listed, revoked', opts, async () => {
  await openPage(page, `${app.url}/profile`);
  await page.fill('#token-name', 'laptop cli');
  await page.press('#token-name', 'Enter');
  const secret = page.locator('#new-token');
  await secret.waitFor();
  const token = await secret.inputValue();
  assert.match(token, /^pv_/);
  await page.click('.secret button');
  await page.locator('.secret [role="status"]', { hasText: 'Copied.' }).waitFor();
  assert.equal(await page.evaluate('navigator.clipboard.readText()'), token);
  assert.equal((await app.api.get('/api/me', { token })).status, 200, 'the new token works');
  const row = page.locator('table.tokens tr', { hasText: 'laptop cli' });
  await row.waitFor();
  // Shown once: a reload lists the token without its secret.
  await openPage(page, `${app.url}/profile`);
  assert.equal(await page.locator('#new-token').count(), 0);
  assert.ok(!(await page.content()).includes(token));
  await row.locator('button', { hasText: 'Revoke' }).click();
  await page.locator('.alert.ok', { hasText: 'revoked' }).waitFor();
  assert.equal(await row.count(), 0);
  assert.equal((await app.api.get('/api/me', { token })).status, 401, 'a revoked token stops working');
  clean('tokens');
});

test('delete, confirmed: the upload is gone', opts, async () => {
  const r = await uploadImage(
    app.api,
    myToken,
    await pngImage(300, 300, 77),
    { description: 'to be deleted' },
    'bye.png',
  );
  assert.equal(r.status, 201);
  await openPage(page, `${app.url}/uploads/${r.body.id}`);
  await page.click('button:text-is("Delete upload…")');
  // Nothing is deleted until the visitor confirms; Cancel keeps it.
  await page.click('.confirm button:text-is("Cancel")');
  assert.equal((await app.api.get(`/api/upload/${r.body.id}`)).status, 200);
  await page.click('button:text-is("Delete upload…")');
  await Promise.all([page.waitForURL(`${app.url}/profile`), page.click('.confirm button:text-is("Yes, delete it")')]);
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal((await app.api.get(`/api/upload/${r.body.id}`)).status, 404);
  clean('delete');
});

test(
  'another user reports it; an admin holds, then removes it (and blocks the file); the modlog shows both',
  opts,
  async () => {
    const reporter = await registerUser(app.api);
    const r = await asUser(reporter);
    await openPage(r.w.page, `${app.url}/uploads/${uploadId}`);
    assert.equal(await r.w.page.locator('.owner').count(), 0, 'no owner tools for another user');
    await r.w.page.click('.reportbox summary');
    await r.w.page.selectOption('#report-reason', 'spam');
    await r.w.page.fill('#report-note', 'posted in every thread');
    await r.w.page.click('.report button[type="submit"]');
    await r.w.page.locator('.report .alert.ok').waitFor();
    assert.deepEqual(r.w.take(), []);
    await r.ctx.close();

    const admin = await registerAdmin(app);
    const a = await asUser(admin);
    await openPage(a.w.page, `${app.url}/moderation`);
    const item = a.w.page.locator('.qitem', { hasText: me.username });
    await item.waitFor();
    assert.match(await item.innerText(), /1 report \(spam ×1\) · 0 trusted/, 'a new account is no trusted reporter');
    assert.match(await item.innerText(), /posted in every thread/);
    await item.locator(`#reason-${uploadId}`).fill('looking into it');
    await item.locator('button', { hasText: 'Hold' }).click();
    await item.locator('.alert.ok', { hasText: 'Held' }).waitFor();
    assert.equal((await app.api.get(`/api/upload/${uploadId}`)).status, 404, 'held: hidden from everyone else');
    await item.locator(`#block-${uploadId}`).selectOption('exact');
    await item.locator('button', { hasText: 'Remove' }).click();
    await item.locator('.alert.ok', { hasText: 'Removed' }).waitFor();
    assert.equal((await app.api.get(`/api/upload/${uploadId}`)).status, 410);
    const again = await uploadImage(app.api, myToken, await pngImage(480, 360, 41), {}, 'again.png');
    assert.equal(again.body.error, 'blocked_content', 'the removed file is blocklisted');
    // And the form says so in plain words.
    const o = await asUser({ token: myToken } as TestUser);
    await openPage(o.w.page, `${app.url}/new`);
    await o.w.page.setInputFiles('#file', {
      name: 'again.png',
      mimeType: 'image/png',
      buffer: await pngImage(480, 360, 41),
    });
    await o.w.page.click('form.new button[type="submit"]');
    await o.w.page.locator('.alert.error', { hasText: 'blocked by the moderators' }).waitFor();
    await o.ctx.close();
    assert.deepEqual(a.w.take(), []);

    await openPage(a.w.page, `${app.url}/modlog`);
    const rows = await a.w.page.locator('table.modlog tbody tr').allInnerTexts();
    assert.ok(
      rows.some((t) => /\bhold\b/.test(t) && t.includes('looking into it') && t.includes(admin.username)),
      rows.join('\n'),
    );
    assert.ok(
      rows.some((t) => /\bremove\b/.test(t)),
      rows.join('\n'),
    );
    assert.deepEqual(a.w.take(), []);
    await a.ctx.close();

    // A private upload held: the public modlog shows its line without naming (or linking) it.
    const secret = await uploadImage(app.api, myToken, await pngImage(320, 240, 77), { is_private: 'true' }, 's.png');
    assert.equal(secret.status, 201, secret.text);
    const held = await app.api.post(
      `/api/admin/uploads/${secret.body.id}/moderation`,
      { action: 'hold', reason: 'private check' },
      { token: admin.token },
    );
    assert.equal(held.status, 200, held.text);

    // The public modlog, signed out: the same actions, no moderator names.
    const anon = await browser.newContext();
    const v = await watchedPage(anon, app.url);
    await openPage(v.page, `${app.url}/modlog`);
    const text = await v.page.locator('table.modlog').innerText();
    assert.match(text, /hold/);
    assert.ok(!text.includes(admin.username));
    const secretRow = v.page.locator('table.modlog tbody tr', { hasText: 'private check' });
    assert.match(await secretRow.innerText(), /an upload \(not public\)/);
    assert.equal(await secretRow.locator('a').count(), 0, 'no link to a private upload');
    assert.equal(await v.page.locator(`a[href="/uploads/${secret.body.id}"]`).count(), 0);
    assert.ok(await v.page.locator(`table.modlog a[href="/uploads/${uploadId}"]`).count(), 'a public one is linked');
    assert.deepEqual(v.take(), []);
    await anon.close();
  },
);

test(
  'the feed loads its next page as you scroll, each page with its own URL; approve and ban from the admin pages',
  opts,
  async () => {
    const poster = await registerUser(app.api);
    for (let i = 0; i < 30; i++) {
      const r = await uploadFields(app.api, poster.token, {
        upload_type: 'link',
        external_url: `https://example.com/post/${i}`,
        description: `scroll item ${i}`,
        tags: 'scrolling',
      });
      assert.equal(r.status, 201, r.text);
    }
    await openPage(page, `${app.url}/?tag=scrolling`);
    assert.equal(await page.locator('.card').count(), 24);
    await page.locator('a.more').scrollIntoViewIfNeeded();
    // The next page is asked for by cursor, and the address becomes that page's own.
    await page.waitForURL(/\/\?tag=scrolling&cursor=[\w-]+$/);
    const second = page.url();
    await page.locator('.card', { hasText: 'scroll item 0' }).waitFor();
    assert.equal(await page.locator('.card').count(), 30);
    assert.equal(await page.locator('a.more').isHidden(), true, 'no more pages');
    // The second page's own URL shows that page (rendered by the server), with a way back to the first.
    await openPage(page, second);
    assert.equal(await page.locator('.card').count(), 6);
    assert.equal(await page.locator('a', { hasText: 'Newest uploads' }).getAttribute('href'), '/?tag=scrolling');
    // Old links by number still open; a broken cursor link is an error page saying so in words (400).
    await openPage(page, `${app.url}/?tag=scrolling&page=2`);
    assert.equal(await page.locator('.card').count(), 6);
    assert.equal(await page.locator('a', { hasText: 'Newer page' }).getAttribute('href'), '/?tag=scrolling');
    const broken = await page.goto(`${app.url}/?tag=scrolling&cursor=broken`);
    assert.equal(broken?.status(), 400);
    assert.match(await page.locator('main .alert').innerText(), /cursor/);
    w.take(); // the 400 the broken link provoked
    clean('scrolling');

    // The poster's profile shows twelve, then the rest a page at a time.
    const own = await asUser(poster);
    await openPage(own.w.page, `${app.url}/profile`);
    assert.equal(await own.w.page.locator('.card').count(), 12);
    for (const shown of [24, 30]) {
      await own.w.page.click('button.more');
      // A locator, not a string predicate: the page's CSP allows no eval.
      await own.w.page
        .locator('.card')
        .nth(shown - 1)
        .waitFor();
      assert.equal(await own.w.page.locator('.card').count(), shown);
    }
    assert.equal(await own.w.page.locator('button.more').isHidden(), true, 'all 30 shown: no more');
    await own.w.page.locator('.card', { hasText: 'scroll item 0' }).waitFor();
    assert.deepEqual(own.w.take(), []);
    await own.ctx.close();

    const reporter = await registerUser(app.api);
    const item = (await app.api.get('/api/uploads?tag=scrolling&limit=1')).body.uploads[0];
    await app.api.post(`/api/upload/${item.id}/report`, { reason: 'spam' }, { token: reporter.token });
    const admin = await registerAdmin(app);
    const a = await asUser(admin);
    await openPage(a.w.page, `${app.url}/moderation`);
    const row = a.w.page.locator('.qitem', { hasText: poster.username });
    await row.locator('button', { hasText: 'Approve' }).click();
    await row.locator('.alert.ok', { hasText: 'Approved' }).waitFor();
    assert.equal((await app.api.get(`/api/upload/${item.id}`)).body.moderation, 'visible');
    await a.w.page.fill('#user-q', poster.username);
    await a.w.page.press('#user-q', 'Enter');
    const user = a.w.page.locator('table.users tr', { hasText: poster.username });
    await user.locator(`[aria-label="Reason to ban ${poster.username}"]`).fill('spam links');
    // Exact names: a string hasText is a case-insensitive substring, so 'Ban' would also match 'Unban'.
    await user.getByRole('button', { name: `Ban ${poster.username}`, exact: true }).click();
    await user.getByRole('button', { name: `Unban ${poster.username}`, exact: true }).waitFor();
    assert.equal((await app.api.get('/api/me', { token: poster.token })).body.error, 'banned');
    await user.getByRole('button', { name: `Unban ${poster.username}`, exact: true }).click();
    await user.getByRole('button', { name: `Ban ${poster.username}`, exact: true }).waitFor();
    assert.equal((await app.api.get('/api/me', { token: poster.token })).status, 200);
    assert.deepEqual(a.w.take(), []);
    await a.ctx.close();
  },
);
