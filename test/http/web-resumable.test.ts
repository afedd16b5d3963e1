/**
 * The upload form resumes (issue 49 item 5), in Chromium against the real server: a file larger than one chunk goes
 * through tus (tus-js-client, fetched when such a file is chosen); the network drops in the middle (the browser goes
 * offline as its second chunk leaves), the form says so and waits; when the network is back it asks the server's
 * offset and goes on from there, shows progress, and ends on the upload's page with one record. A reload in the
 * middle goes on from the server's offset too. Small files still go in one direct request, without the client.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
      // The second chunk (the first PATCH: the first went with the creation) never arrives: the browser goes
      // offline as it leaves.
      await page.route(`**${TUS}/*`, async (route) => {
        const req = route.request();
        if (req.method() !== 'PATCH') return route.continue();
        patches.push(Number(req.headers()['upload-offset']));
        if (patches.length === 1 && !dropped) {
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
      // The resumable client comes when a file larger than one chunk is chosen, not with the form.
      const client = page.waitForRequest((r) => /\/assets\/resumable\.[0-9a-f]{12}\.js$/.test(r.url()));
      await page.setInputFiles('#file', { name: 'long-train.jpg', mimeType: 'image/jpeg', buffer: big });
      await client;
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
      assert.equal(
        Number(held.headers.get('upload-offset')),
        CHUNK,
        'the first chunk (in the creation) is on the server',
      );
      assert.ok(await page.locator('progress:not([hidden])').isVisible(), 'the progress bar stays');
      assert.ok(Number(await page.locator('progress').getAttribute('value')) > 0);

      await ctx.setOffline(false);
      await page.waitForURL(/\/uploads\/[0-9a-f-]{36}$/);
      await page.waitForSelector('body[data-ready="true"]');
      assert.equal(await page.locator('.description').innerText(), 'Sent from a train through a tunnel');
      await page.waitForFunction(() => (globalThis as any).document.querySelector('figure.media img').naturalWidth > 0);
      // On from the server's offset: the lost chunk once more, nothing before it.
      assert.deepEqual(patches.slice(0, 2), [CHUNK, CHUNK]);
      assert.equal(patches.length, Math.ceil(big.length / CHUNK), 'one chunk sent twice (the first in the creation)');
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

test(
  'a reload in the middle of an upload: the same file goes on from the server offset, no second upload',
  { skip: noBrowser },
  async () => {
    const big = await photoJpeg({ width: 3600, height: 2700, seed: 4962 });
    // From a file on disk: its name, size and date are what the upload is found again by.
    const dir = await mkdtemp(join(tmpdir(), 'pixvote-web-resumable-'));
    const path = join(dir, 'ferry.jpg');
    await writeFile(path, big);
    const { ctx, w } = await signedIn();
    const { page } = w;
    try {
      const requests: string[] = [];
      let cut = false;
      await page.route(`**${TUS}**`, async (route) => {
        const req = route.request();
        const offset = req.headers()['upload-offset'];
        requests.push(`${req.method()}${req.method() === 'PATCH' ? ` ${offset}` : ''}`);
        // The second chunk is lost (the connection reset), and the page is reloaded while the form waits.
        if (req.method() === 'PATCH' && Number(offset) === CHUNK && !cut) {
          cut = true;
          return route.abort('connectionreset');
        }
        return route.continue();
      });
      const before = await countUploads(app);
      await openPage(page, `${app.url}/new`);
      await page.setInputFiles('#file', path);
      await page.fill('#description', 'Sent from a ferry');
      await page.click('form.new button[type="submit"]');
      await page.locator('.alert.info', { hasText: 'The connection was lost: trying again in 1 s' }).waitFor();
      // The first chunk goes with the creation (creation-with-upload).
      assert.deepEqual(requests, ['POST', `PATCH ${CHUNK}`]);
      await page.reload();
      await page.waitForSelector('body[data-ready="true"]');
      requests.length = 0;
      await page.setInputFiles('#file', path);
      await page.fill('#description', 'Sent from a ferry');
      await page.click('form.new button[type="submit"]');
      await page.waitForURL(/\/uploads\/[0-9a-f-]{36}$/);
      await page.waitForSelector('body[data-ready="true"]');
      assert.equal(await page.locator('.description').innerText(), 'Sent from a ferry');
      // No new upload: the kept one's offset (HEAD), then on from the second chunk; then its outcome.
      assert.deepEqual(requests.slice(0, 2), ['HEAD', `PATCH ${CHUNK}`]);
      assert.equal(requests.filter((r) => r.startsWith('PATCH')).length, Math.ceil(big.length / CHUNK) - 1);
      assert.equal(requests.at(-1), 'GET', 'the result');
      assert.equal(await countUploads(app), before + 1, 'one record');
      // Done: nothing is kept to resume any more.
      const kept = await page.evaluate(() =>
        Object.keys((globalThis as any).localStorage).filter((k: string) => k.startsWith('tus::')),
      );
      assert.deepEqual(kept, []);
      const problems = w.take();
      assert.ok(
        problems.length > 0 && problems.every((p) => p.includes(TUS) || p.includes('ERR_CONNECTION_RESET')),
        problems.join('\n'),
      );
    } finally {
      await ctx.close();
      await rm(dir, { recursive: true, force: true });
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
      else if (r.url().includes('/assets/resumable.')) paths.push(`GET ${new URL(r.url()).pathname}`);
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
