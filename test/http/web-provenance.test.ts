/**
 * The "Made with AI" label in a real browser (issue 50): on the cards in the feed (`ai=only`, as the server renders
 * them and the page adopts them) and on the upload's page (as web/pages/upload.js builds it) of an upload its owner
 * labelled and of one whose XMP says generated (test/support/provenance-fixtures.ts), saying what each rests on;
 * none on an unlabelled one. The wording for each basis (C2PA, IPTC, the uploader) is the one view's
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
import { jpegWithXmpSourceType } from '../support/provenance-fixtures.ts';

let app: TestApp;
let browser: Browser;
let owner: TestUser;
let labelled = '';
let plain = '';
let marked = '';
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
  const c = await uploadImage(app.api, owner.token, await jpegWithXmpSourceType('trainedAlgorithmicMedia'));
  assert.equal(c.body.ai_label, 'marker', c.text);
  marked = c.body.id;
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
  assert.equal(await cards.count(), 2);
  const card = (id: string) => w.page.locator('li.card', { has: w.page.locator(`a[href="/uploads/${id}"]`) });
  assert.equal((await card(labelled).locator('.badge.ai').innerText()).trim(), LABEL);
  assert.equal(
    (await card(marked).locator('.badge.ai').innerText()).trim(),
    'Made with AI (IPTC metadata in the file)',
  );
  // The whole feed: the unlabelled card carries no label.
  await openPage(w.page, `${app.url}/`);
  assert.equal(await card(plain).locator('.badge.ai').count(), 0);
  assert.equal(await card(labelled).locator('.badge.ai').count(), 1);
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
    await openPage(w.page, `${app.url}/uploads/${marked}`);
    assert.equal(
      (await w.page.locator('article.upload .meta .badge.ai').innerText()).trim(),
      'Made with AI (IPTC metadata in the file)',
    );
    await openPage(w.page, `${app.url}/uploads/${plain}`);
    await w.page.locator('article.upload .meta').waitFor();
    assert.equal(await w.page.locator('.badge.ai').count(), 0);
    assert.deepEqual(w.take(), []);
  },
);
