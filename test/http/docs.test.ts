import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { onPostgres } from '../support/env.ts';
import { DOCS_CSP } from '../../src/gateway/routes/docs.routes.ts';
import { scaledBudget } from '../support/budget.ts';

const CHROMIUM = '/usr/bin/chromium';
const INSTALL = 'apt-get update && apt-get install -y chromium';
// A developer machine without Chromium skips the browser check and says why;
// CI (PIXVOTE_REQUIRE_SERVICES=1) fails instead.
const noBrowser =
  !existsSync(CHROMIUM) &&
  process.env.PIXVOTE_REQUIRE_SERVICES !== '1' &&
  `needs Debian's chromium at ${CHROMIUM}: ${INSTALL}`;

let app: TestApp;
before(async () => {
  app = await startApp();
});
after(() => app.close());

test('GET /docs is an HTML page whose CSP allows scripts, styles and fetches from this origin only', async () => {
  const r = await app.api.get('/docs');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(r.headers.get('content-security-policy'), DOCS_CSP);
  assert.match(DOCS_CSP, /default-src 'none'/);
  assert.doesNotMatch(DOCS_CSP, /unsafe-inline|unsafe-eval|https?:|\*/);
  assert.doesNotMatch(r.text, /https?:\/\//, 'the page references nothing outside the service');
  assert.doesNotMatch(r.text, /<script>|<style>| style=/, 'no inline script or style');
  for (const src of r.text.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)) {
    const asset = await app.api.get(src[1]!);
    assert.equal(asset.status, 200, src[1]);
    const cached = await app.api.get(src[1]!, { headers: { 'if-none-match': asset.headers.get('etag')! } });
    assert.equal(cached.status, 304);
  }
  assert.equal((await app.api.get('/docs/nothing.js')).status, 404);
});

test(
  'the reference page renders the document in headless Chromium, offline, without CSP violations',
  // The page and the document are the same on every database: rendered once, in the SQLite pass.
  { skip: noBrowser || (onPostgres && 'the page is the same on every database (SQLite pass)') },
  async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: ${INSTALL}`);
    const profile = await mkdtemp(join(tmpdir(), 'pixvote-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const origin = new URL(app.url).origin;
      const foreign: string[] = [];
      // The service must work offline: anything the page asks of another origin is recorded and refused.
      await context.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith(origin) || url.startsWith('data:')) return route.continue();
        foreign.push(url);
        return route.abort();
      });
      const page = context.pages()[0] ?? (await context.newPage());
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      // Runs in the page (a string: this file is type-checked without the DOM library).
      await page.addInitScript(
        "document.addEventListener('securitypolicyviolation', (e) => " +
          "console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));",
      );

      await page.goto(`${app.url}/docs`, { waitUntil: 'load' });
      const upload = page.locator('#operations-uploads-createUpload');
      await upload.waitFor({ state: 'visible', timeout: scaledBudget(30_000) });
      assert.match(await upload.innerText(), /\/api\/v1\/upload/);
      assert.match(await page.locator('.info .title').innerText(), /pixvote API/);
      // Expanding the operation renders its parameters and responses from the document.
      await upload.locator('.opblock-summary').first().click();
      await page
        .locator('#operations-uploads-createUpload .responses-table')
        .first()
        .waitFor({ timeout: scaledBudget(30_000) });
      assert.match(await upload.innerText(), /Idempotency-Key/);

      // "Try it out" pre-fills the multipart form from the document's examples: a public upload with real tags,
      // never Swagger UI's placeholders ("string", true).
      await upload.locator('.try-out__btn').click();
      const form = upload.locator('.opblock-section-request-body');
      await form
        .locator('input[type="file"]')
        .first()
        .waitFor({ timeout: scaledBudget(30_000) });
      const fields = Object.fromEntries(
        await form
          .locator('tr')
          .evaluateAll((rows: any[]) =>
            rows
              .map((row) => [
                row.querySelector('.parameter__name')?.textContent?.replace(/[\s*]+$/, ''),
                row.querySelector('select, textarea, input:not([type="checkbox"])')?.value,
              ])
              .filter(([name]) => name),
          ),
      ) as Record<string, string>;
      assert.equal(fields.upload_type, 'image');
      assert.equal(fields.is_private, 'false');
      assert.equal(fields.tags, 'cats, cute');
      assert.match(fields.description ?? '', /\w+ \w+ \w+/);
      assert.deepEqual(
        Object.entries(fields).filter(([, v]) => v === 'string' || v === 'true'),
        [],
      );
      // The JSON body of POST /api/auth starts as a real login, not {"action": "string"}.
      const auth = page.locator('#operations-auth-auth');
      await auth.locator('.opblock-summary').first().click();
      await auth.locator('.try-out__btn').click();
      const authBody = JSON.parse(await auth.locator('textarea.body-param__text').inputValue());
      assert.equal(authBody.action, 'login');
      assert.ok(!Object.values(authBody).includes('string'), JSON.stringify(authBody));

      assert.deepEqual(foreign, [], 'requests to other origins');
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    }
  },
);
