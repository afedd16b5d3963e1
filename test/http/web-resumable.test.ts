/**
 * The upload form resumes (issue 49 item 5), in Chromium against the real server: a file larger than one chunk goes
 * through tus; the network drops in the middle (the browser goes offline as its second chunk leaves), the form says
 * so and waits; when the network is back it asks the server's offset and goes on from there, shows progress, and
 * ends on the upload's page with one record. Small files still go in one direct request.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, openPage, watchedPage, type WatchedPage } from '../support/browser.ts';
import { photoJpeg, pngImage } from '../support/fixtures.ts';
import { countUploads } from '../support/uploads.ts';
import { registerUser, type TestUser } from '../support/users.ts';

const TUS = '/api/uploads/resumable';
const CHUNK = 1024 * 1024;

let app: TestApp;
let browser: Browser;
let user: TestUser;
before(async () => {
  app = await startApp();
  user = await registerUser(app.api);
  if (noBrowser) return;
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await app.close();
});

async function signedIn(): Promise<{ ctx: BrowserContext; w: WatchedPage }> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await ctx.addCookies([{ name: 'auth-token', value: user.token, url: app.url }]);
  return { ctx, w: await watchedPage(ctx, app.url) };
}

test(
  'the network drops mid-upload: the form waits, resumes from the server offset and finishes',
  { skip: noBrowser },
  async () => {
    const big = await photoJpeg({ width: 3600, height: 2700, seed: 4960 });
    assert.ok(big.length > 1.5 * CHUNK && big.length < 10 * CHUNK, `fixture of ${big.length} bytes`);
    const { ctx, w } = await signedIn();
    const { page } = w;
    try {
      const patches: number[] = [];
      let location = '';
      let dropped = false;
      // The second chunk never arrives: the browser goes offline as it leaves.
      await page.route(`**${TUS}/*`, async (route) => {
        const req = route.request();
        if (req.method() !== 'PATCH') return route.continue();
        patches.push(Number(req.headers()['upload-offset']));
        if (patches.length === 2 && !dropped) {
          dropped = true;
          await ctx.setOffline(true);
          return route.abort('internetdisconnected');
        }
        return route.continue();
      });
      page.on('response', (r) => {
        if (r.request().method() === 'POST' && r.url().endsWith(TUS)) location = r.headers()['location'] ?? '';
      });
      const before = await countUploads(app);
      await openPage(page, `${app.url}/new`);
      await page.setInputFiles('#file', { name: 'long-train.jpg', mimeType: 'image/jpeg', buffer: big });
      await page.fill('#description', 'Sent from a train through a tunnel');
      await page.click('form.new button[type="submit"]');

      await page
        .locator('.alert.info', { hasText: 'You are offline: the upload goes on when the connection is back.' })
        .waitFor();
      assert.match(location, new RegExp(`^${TUS}/[0-9a-f-]{36}$`));
      const held = await fetch(app.url + location, {
        method: 'HEAD',
        headers: { 'tus-resumable': '1.0.0', authorization: `Bearer ${user.token}` },
      });
      assert.equal(Number(held.headers.get('upload-offset')), CHUNK, 'the first chunk is on the server');
      assert.ok(await page.locator('progress:not([hidden])').isVisible(), 'the progress bar stays');
      assert.ok(Number(await page.locator('progress').getAttribute('value')) > 0);

      await ctx.setOffline(false);
      await page.waitForURL(/\/uploads\/[0-9a-f-]{36}$/);
      await page.waitForSelector('body[data-ready="true"]');
      assert.equal(await page.locator('.description').innerText(), 'Sent from a train through a tunnel');
      await page.waitForFunction(() => (globalThis as any).document.querySelector('figure.media img').naturalWidth > 0);
      // On from the server's offset: the lost chunk once more, nothing before it.
      assert.deepEqual(patches.slice(0, 3), [0, CHUNK, CHUNK]);
      assert.equal(patches.length, Math.ceil(big.length / CHUNK) + 1, 'one chunk sent twice');
      assert.equal(await countUploads(app), before + 1, 'one record');
      // The dropped chunk, as the browser reports it (a failed request, Chromium's console line): nothing else.
      const dropLines = (p: string) =>
        (p.startsWith('request failed: ') && p.includes(TUS) && p.endsWith('net::ERR_INTERNET_DISCONNECTED')) ||
        p === 'console error: Failed to load resource: net::ERR_INTERNET_DISCONNECTED';
      const problems = w.take();
      assert.ok(problems.some(dropLines), 'the chunk was dropped');
      assert.deepEqual(
        problems.filter((p) => !dropLines(p)),
        [],
      );
    } finally {
      await ctx.close();
    }
  },
);

test('a file of one chunk or less goes in one direct request', { skip: noBrowser }, async () => {
  const { ctx, w } = await signedIn();
  const { page } = w;
  try {
    const paths: string[] = [];
    page.on('request', (r) => {
      if (r.method() !== 'GET') paths.push(`${r.method()} ${new URL(r.url()).pathname}`);
    });
    await openPage(page, `${app.url}/new`);
    await page.setInputFiles('#file', {
      name: 'small.png',
      mimeType: 'image/png',
      buffer: await pngImage(300, 200, 4961),
    });
    await page.click('form.new button[type="submit"]');
    await page.waitForURL(/\/uploads\/[0-9a-f-]{36}$/);
    assert.deepEqual(paths, ['POST /api/v1/upload']);
    assert.deepEqual(w.take(), []);
  } finally {
    await ctx.close();
  }
});
