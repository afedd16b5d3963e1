/**
 * The details of issue 30 found by using the pages at 375 px and 1280 px, each in a real browser: tables that
 * keep their words whole, modlog lines that name their targets, plurals, the tag editor's counter, no report form
 * on one's own upload, the upload page titled by its description, the cards' ages and vote buttons, and the
 * links between the site and its API reference.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, openPage, watchedPage, type WatchedPage } from '../support/browser.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadImage } from '../support/uploads.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';

let app: TestApp;
let browser: Browser;
let owner: TestUser;
let admin: TestUser;
let victim: TestUser;
let uploadId = '';
let bareId = '';
const SHA = 'a3f5c0e1b2d4967880a1b2c3d4e5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8';
const opened: BrowserContext[] = [];

before(async () => {
  app = await startApp();
  if (noBrowser) return;
  browser = await launchBrowser();
  owner = await registerUser(app.api);
  admin = await registerAdmin(app);
  victim = await registerUser(app.api);
  const r = await uploadImage(
    app.api,
    owner.token,
    await pngImage(320, 240, 3001),
    { description: '  Two shapes at dusk  ', tags: 'shapes, dusk' },
    'dusk.png',
  );
  assert.equal(r.status, 201, r.text);
  uploadId = r.body.id;
  const bare = await uploadImage(app.api, owner.token, await pngImage(200, 200, 3002), {}, 'bare.png');
  assert.equal(bare.status, 201, bare.text);
  bareId = bare.body.id;
  // Modlog lines on each kind of target: an upload, a user (banned, then unbanned), a blocklist entry.
  const approve = { action: 'approve', reason: 'looks fine' };
  assert.equal(
    (await app.api.post(`/api/admin/uploads/${uploadId}/moderation`, approve, { token: admin.token })).status,
    200,
  );
  const ban = { reason: 'spam links everywhere', until: null, remove_uploads: false };
  assert.equal((await app.api.post(`/api/admin/users/${victim.id}/ban`, ban, { token: admin.token })).status, 200);
  assert.equal((await app.api.del(`/api/admin/users/${victim.id}/ban`, { token: admin.token })).status, 200);
  const block = { entries: [{ sha256: SHA, reason: 'known scam image' }] };
  const blocked = await app.api.post('/api/admin/blocklist', block, { token: admin.token });
  assert.ok(blocked.status < 300, blocked.text);
});
after(async () => {
  for (const c of opened) await c.close();
  await browser?.close();
  await app.close();
});
const opts = { skip: noBrowser };

/** A page as `user` (signed out for null) at `width` px. */
async function visit(user: TestUser | null, width = 1280): Promise<WatchedPage> {
  const ctx = await browser.newContext({ viewport: { width, height: 800 } });
  opened.push(ctx);
  if (user) await ctx.addCookies([{ name: 'auth-token', value: user.token, url: app.url }]);
  return watchedPage(ctx, app.url);
}

/** The words in the page's table cells that the layout broke across lines (each should be one box). */
async function brokenWords(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const d = (globalThis as any).document;
    const broken: string[] = [];
    for (const cell of d.querySelectorAll('th, td')) {
      const walker = d.createTreeWalker(cell, 4 /* NodeFilter.SHOW_TEXT */);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const m of (node.data as string).matchAll(/\S+/g)) {
          const range = d.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          if (range.getClientRects().length > 1) broken.push(m[0]);
        }
      }
    }
    return broken;
  });
}

test(
  'at 375 px the modlog and moderation tables keep every word whole, scrolling sideways in a box',
  opts,
  async () => {
    for (const user of [null, admin]) {
      const w = await visit(user, 375);
      await openPage(w.page, `${app.url}/modlog`);
      assert.ok((await w.page.locator('table.modlog tbody tr').count()) >= 4);
      assert.deepEqual(await brokenWords(w.page), [], 'no word in the modlog broken');
      const header = await w.page.locator('table.modlog th').first().boundingBox();
      const lineHeight = await w.page
        .locator('table.modlog th')
        .first()
        .evaluate((th) => {
          const style = (globalThis as any).getComputedStyle(th);
          return Number.parseFloat(style.lineHeight) + Number.parseFloat(style.paddingTop) * 2 + 1;
        });
      assert.ok(header && header.height <= lineHeight + 1, `a header cell is one line (${header?.height})`);
      const overflow = await w.page.evaluate(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      );
      assert.equal(overflow, 0, 'the page itself does not scroll sideways');
      assert.deepEqual(w.take(), []);
    }
    const w = await visit(admin, 375);
    await openPage(w.page, `${app.url}/moderation`);
    await w.page.locator('table.users tbody tr').first().waitFor();
    assert.deepEqual(await brokenWords(w.page), [], 'no word in the users table broken');
    // The box that scrolls is reachable by keyboard and named.
    const box = w.page.locator('.scrollbox', { has: w.page.locator('table.users') });
    assert.equal(await box.getAttribute('tabindex'), '0');
    assert.equal(await box.getAttribute('aria-label'), 'Users');
    assert.deepEqual(w.take(), []);
  },
);

test('modlog lines name their targets: the user, the blocklist entry, a link to the upload', opts, async () => {
  const r = await app.api.get('/api/modlog?limit=50');
  const entries = r.body.entries as Array<{ action: string; target: { type: string; name?: string | null } }>;
  assert.equal(entries.find((e) => e.action === 'ban')?.target.name, victim.username);
  assert.equal(entries.find((e) => e.action === 'block')?.target.name, SHA.slice(0, 12));
  assert.ok(!('name' in entries.find((e) => e.action === 'approve')!.target), 'uploads are named by their link');

  const w = await visit(null);
  await openPage(w.page, `${app.url}/modlog`);
  const row = (action: string) =>
    w.page.locator('table.modlog tbody tr', {
      has: w.page.locator('td:nth-child(2)', { hasText: new RegExp(`^${action}$`) }),
    });
  assert.match(await row('ban').innerText(), new RegExp(`user ${victim.username}`));
  assert.match(await row('unban').innerText(), new RegExp(`user ${victim.username}`));
  assert.match(await row('block').innerText(), new RegExp(`blocklist entry ${SHA.slice(0, 12)}…`));
  assert.equal(await row('approve').locator('a').getAttribute('href'), `/uploads/${uploadId}`);
  assert.doesNotMatch(await w.page.locator('table.modlog').innerText(), /a (user|blocklist) entry/);
  assert.deepEqual(w.take(), []);
});

test('plurals: ban lengths, profile stats and ages say "1 day", "1 upvote", never "1 days"', opts, async () => {
  const a = await visit(admin);
  await openPage(a.page, `${app.url}/moderation`);
  const select = a.page.locator(`[aria-label="Ban length for ${owner.username}"]`);
  await a.page.fill('#user-q', owner.username);
  await a.page.press('#user-q', 'Enter');
  await select.waitFor();
  assert.deepEqual(await select.locator('option').allInnerTexts(), ['1 day', '7 days', '30 days', 'permanently']);
  assert.deepEqual(a.take(), []);

  const voter = await registerUser(app.api);
  assert.equal((await app.api.post('/api/vote', { uploadId, vote: 'fucks' }, { token: voter.token })).status, 200);
  const o = await visit(owner);
  await openPage(o.page, `${app.url}/profile`);
  const text = await o.page.locator('main').innerText();
  assert.match(text, /2 uploads · 1 upvote and 0 downvotes received · 0 votes cast/);
  await openPage(o.page, `${app.url}/uploads/${uploadId}`);
  assert.equal(await o.page.locator('.counts').innerText(), '▲ 1 upvote · ▼ 0 downvotes');
  await o.page.click('button.vote.fucks');
  await o.page.locator('.counts', { hasText: '▲ 2 upvotes' }).waitFor();
  assert.deepEqual(o.take(), []);
});

test('the tag editor counts the tags the upload has and those typed, each once', opts, async () => {
  const w = await visit(owner);
  await openPage(w.page, `${app.url}/uploads/${uploadId}`);
  assert.equal(await w.page.locator('#add-tags-count').innerText(), '2 / 10 tags');
  await w.page.fill('#add-tags', 'Dusk, evening, warm light');
  assert.equal(await w.page.locator('#add-tags-count').innerText(), '4 / 10 tags', 'dusk is counted once');
  await w.page.fill('#add-tags', 'a, b, c, d, e, f, g, h, i');
  assert.equal(await w.page.locator('#add-tags-count').innerText(), '11 / 10 tags');
  assert.match((await w.page.locator('#add-tags-count').getAttribute('class')) ?? '', /over/);
  await w.page.fill('#add-tags', 'evening');
  await w.page.click('.owner form button[type="submit"]');
  await w.page.locator('.alert.ok', { hasText: 'Tags added' }).waitFor();
  assert.equal(await w.page.locator('#add-tags-count').innerText(), '3 / 10 tags', 'the added tag now counts');
  assert.deepEqual(w.take(), []);
});

test('the owner is not offered to report their own upload; anyone else signed in is', opts, async () => {
  const mine = await visit(owner);
  await openPage(mine.page, `${app.url}/uploads/${uploadId}`);
  assert.equal(await mine.page.locator('.owner').count(), 1);
  assert.equal(await mine.page.locator('.reportbox').count(), 0);
  const other = await visit(await registerUser(app.api));
  await openPage(other.page, `${app.url}/uploads/${uploadId}`);
  assert.equal(await other.page.locator('.reportbox summary').innerText(), 'Report this upload');
  assert.deepEqual([...mine.take(), ...other.take()], []);
});

test('the upload page is titled by its description, trimmed; without one, by who posted it', opts, async () => {
  const w = await visit(null);
  await openPage(w.page, `${app.url}/uploads/${uploadId}`);
  assert.equal(await w.page.title(), 'Two shapes at dusk · pixvote');
  await openPage(w.page, `${app.url}/uploads/${bareId}`);
  assert.equal(await w.page.title(), `Upload by ${owner.username} · pixvote`);
  assert.deepEqual(w.take(), []);
});

test('feed cards show their age, and signed in, vote buttons that vote', opts, async () => {
  const anon = await visit(null);
  await openPage(anon.page, `${app.url}/`);
  const anonCard = anon.page.locator('.card', { hasText: 'Two shapes at dusk' });
  const time = anonCard.locator('time');
  assert.match((await time.getAttribute('datetime')) ?? '', /^\d{4}-\d\d-\d\dT/);
  assert.match((await time.getAttribute('title')) ?? '', /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
  assert.match(await time.innerText(), /^(just now|\d+ minutes? ago)$/);
  assert.equal(await anonCard.locator('button').count(), 0, 'signed out: the counts, no buttons');
  assert.deepEqual(anon.take(), []);

  const voter = await registerUser(app.api);
  const w = await visit(voter);
  const r = await app.api.get('/', { unchecked: 'an HTML page', token: voter.token });
  assert.match(r.text, /<button type="button" class="vote fucks" aria-pressed="false"><span class="sr">Upvote /);
  await openPage(w.page, `${app.url}/`);
  const card = w.page.locator('.card', { hasText: 'Two shapes at dusk' });
  const up = card.getByRole('button', { name: /^Upvote Two shapes at dusk, upvotes:\s*\d+\s*$/ });
  const down = card.getByRole('button', { name: /^Downvote Two shapes at dusk, downvotes:\s*\d+\s*$/ });
  const before = Number(await up.locator('.n-up').innerText());
  await up.click();
  await card.locator('button.vote.fucks[aria-pressed="true"]').waitFor();
  assert.equal(await up.locator('.n-up').innerText(), String(before + 1));
  assert.equal((await app.api.get(`/api/upload/${uploadId}`, { token: voter.token })).body.my_vote, 'fucks');
  await down.click();
  await card.locator('button.vote.does_not_fuck[aria-pressed="true"]').waitFor();
  assert.equal(await up.getAttribute('aria-pressed'), 'false');
  assert.equal(await up.locator('.n-up').innerText(), String(before));
  await down.click(); // pressing the pressed one retracts
  await card.locator('button.vote.does_not_fuck[aria-pressed="false"]').waitFor();
  assert.equal((await app.api.get(`/api/upload/${uploadId}`, { token: voter.token })).body.my_vote, null);
  assert.deepEqual(w.take(), []);
});

test('the site links to its API reference, and the reference back to the site', opts, async () => {
  const w = await visit(null);
  await openPage(w.page, `${app.url}/modlog`);
  await Promise.all([w.page.waitForURL(`${app.url}/docs`), w.page.click('header nav a:text-is("API")')]);
  await w.page.locator('#swagger-ui').waitFor();
  await Promise.all([w.page.waitForURL(`${app.url}/`), w.page.click('a:text-is("← Back to pixvote")')]);
  await w.page.waitForSelector('body[data-ready="true"]');
  assert.deepEqual(w.take(), []);
});
