/**
 * The "Made with AI" label in a real browser (issue 50): on a labelled upload's card in the feed (`ai=only`, as the
 * server renders it and the page adopts it) and on its page (as web/pages/upload.js builds it), saying what it rests
 * on; none on an unlabelled one. The wording for each basis (C2PA, IPTC, the uploader) is the one view's
 * (src/gateway/views/card-view.ts, `provenanceLabels`), checked in test/unit/web-views.test.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, openPage, watchedPage } from '../support/browser.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadImage } from '../support/uploads.ts';
import { registerUser, type TestUser } from '../support/users.ts';

let app: TestApp;
let browser: Browser;
let owner: TestUser;
let labelled = '';
let plain = '';
const opened: BrowserContext[] = [];
const LABEL = 'Made with AI (marked by the uploader)';

before(async () => {
  app = await startApp();
  if (noBrowser) return;
  browser = await launchBrowser();
  owner = await registerUser(app.api);
  const a = await uploadImage(app.api, owner.token, await pngImage(320, 240, 5101), { description: 'a robot' });
  assert.equal(a.status, 201, a.text);
  labelled = a.body.id;
  const on = await app.api.patch(`/api/upload/${labelled}`, { ai_generated: true }, { token: owner.token });
  assert.equal(on.body.ai_label, 'owner');
  const b = await uploadImage(app.api, owner.token, await pngImage(320, 240, 5102), { description: 'a pencil' });
  plain = b.body.id;
});
after(async () => {
  for (const c of opened) await c.close();
  await browser?.close();
  await app.close();
});

async function visit() {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  opened.push(ctx);
  return watchedPage(ctx, app.url);
}

test("the feed's card of a labelled upload says Made with AI and what it rests on", { skip: noBrowser }, async () => {
  const w = await visit();
  await openPage(w.page, `${app.url}/?ai=only`);
  const cards = w.page.locator('ol.grid > li.card');
  assert.equal(await cards.count(), 1);
  const card = cards.first();
  assert.equal(await card.locator('a.cardlink').getAttribute('href'), `/uploads/${labelled}`);
  assert.equal((await card.locator('.badge.ai').innerText()).trim(), LABEL);
  // The whole feed: the unlabelled card carries no label.
  await openPage(w.page, `${app.url}/`);
  const other = w.page.locator('li.card', { has: w.page.locator(`a[href="/uploads/${plain}"]`) });
  assert.equal(await other.locator('.badge.ai').count(), 0);
  assert.equal(
    await w.page
      .locator('li.card', { has: w.page.locator(`a[href="/uploads/${labelled}"]`) })
      .locator('.badge.ai')
      .count(),
    1,
  );
  // The filter's links: "Made with AI" is the current one on ?ai=only.
  await openPage(w.page, `${app.url}/?ai=only`);
  assert.equal(
    await w.page.locator('nav[aria-label="Made with AI"] a[aria-current="page"]').innerText(),
    'Made with AI',
  );
  assert.deepEqual(w.take(), []);
});

test(
  "the upload's page (built by its script) shows the label; an unlabelled one none",
  { skip: noBrowser },
  async () => {
    const w = await visit();
    await openPage(w.page, `${app.url}/uploads/${labelled}`);
    assert.equal((await w.page.locator('article.upload .meta .badge.ai').innerText()).trim(), LABEL);
    await openPage(w.page, `${app.url}/uploads/${plain}`);
    await w.page.locator('article.upload .meta').waitFor();
    assert.equal(await w.page.locator('.badge.ai').count(), 0);
    assert.deepEqual(w.take(), []);
  },
);
