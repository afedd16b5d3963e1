/**
 * Accessibility and layout of every web page (issue 20): axe-core finds no serious or critical violation, at
 * desktop width and at 375 px, where nothing overflows sideways either; and every page stays clean (no foreign
 * or failed request, no console error).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, openPage, watchedPage } from '../support/browser.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadFields, uploadImage } from '../support/uploads.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let app: TestApp;
let browser: Browser;
let owner: TestUser;
let admin: TestUser;
let imageId = '';
let linkId = '';

before(async () => {
  app = await startApp();
  if (noBrowser) return;
  browser = await launchBrowser();
  owner = await registerUser(app.api);
  admin = await registerAdmin(app);
  for (let i = 0; i < 5; i++) {
    const r = await uploadImage(app.api, owner.token, await pngImage(360, 240 + i * 20, 900 + i), {
      description: `Shapes number ${i}, a fairly long description that has to wrap on a narrow screen`,
      tags: 'shapes, generated',
      is_private: String(i === 4),
    });
    assert.equal(r.status, 201, r.text);
    imageId = r.body.id;
  }
  const link = await uploadFields(app.api, owner.token, {
    upload_type: 'link',
    external_url: 'https://open.spotify.com/track/4uLU6hMCjMI75M1A2tKUQC',
    description: 'a song',
  });
  linkId = link.body.id;
  await app.api.post('/api/auth/tokens/generate', { name: 'ci uploader' }, { token: owner.token });
  await app.api.post(`/api/upload/${imageId}/report`, { reason: 'spam', note: 'again' }, { token: admin.token });
  await app.api.post(
    `/api/admin/uploads/${linkId}/moderation`,
    { action: 'approve', reason: 'fine' },
    { token: admin.token },
  );
});
after(async () => {
  await browser?.close();
  await app.close();
});

const PAGES: Array<[string, () => string, () => TestUser | null]> = [
  ['/', () => '/', () => null],
  ['/ signed in', () => '/?sort=top', () => owner],
  ['upload page (owner)', () => `/uploads/${imageId}`, () => owner],
  ['link upload page', () => `/uploads/${linkId}`, () => null],
  ['upload form', () => '/new', () => owner],
  ['sign in', () => '/signin', () => null],
  ['sign up', () => '/signup', () => null],
  ['profile', () => '/profile', () => owner],
  ['moderation', () => '/moderation', () => admin],
  ['modlog', () => '/modlog', () => admin],
  ['user page', () => `/u/${owner.username}`, () => null],
];

for (const [width, height] of [
  [1280, 900],
  [375, 740],
] as const) {
  test(
    `every page at ${width} px: no serious or critical axe violation, nothing overflows`,
    { skip: noBrowser },
    async () => {
      const found: string[] = [];
      for (const [name, path, who] of PAGES) {
        const context = await browser.newContext({ viewport: { width, height } });
        const user = who();
        if (user) await context.addCookies([{ name: 'auth-token', value: user.token, url: app.url }]);
        const w = await watchedPage(context, app.url);
        await openPage(w.page, app.url + path());
        // Injected through the DevTools protocol, not as a page script: the page's CSP stays as it is.
        await w.page.evaluate(axeSource);
        const result = await w.page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: unknown[] }> }>(
          "axe.run(document, { resultTypes: ['violations'] })",
        );
        for (const v of result.violations) {
          if (v.impact === 'serious' || v.impact === 'critical')
            found.push(`${name}: ${v.id} (${v.impact}) ×${v.nodes.length}`);
        }
        const overflow = await w.page.evaluate<number>('document.scrollingElement.scrollWidth');
        assert.ok(overflow <= width, `${name}: ${overflow} px wide at ${width} px`);
        assert.deepEqual(w.take(), [], `${name}: clean`);
        await context.close();
      }
      assert.deepEqual(found, []);
    },
  );
}
