/**
 * Shared links unfurl (issue 30): an upload's page read as a chat app reads it (open-graph-scraper fetching the
 * running app), its oEmbed discovery link followed, private, held and removed uploads describing nothing; the
 * page readable in Chromium with JavaScript off; hostile descriptions escaped in the head and the body.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import ogs from 'open-graph-scraper';
import sharp from 'sharp';
import type { Browser } from 'playwright-core';
import { startApp, type TestApp } from '../support/app.ts';
import { launchBrowser, noBrowser, watchedPage } from '../support/browser.ts';
import { pngImage } from '../support/fixtures.ts';
import { uploadFields, uploadImage } from '../support/uploads.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';

let app: TestApp;
let origin: string;
let owner: TestUser;
let admin: TestUser;
let imageId: string;
let linkId: string;
let privateId: string;
let heldId: string;
let removedId: string;

const LONG = 'A kitten asleep on a warm keyboard, dreaming of mice and of the sunny patch that moves across the floor';
const PWN =
  `</title><b id="injected">bold</b><img src=x onerror="window.__pwned=1">` +
  `<script>window.__pwned=1</script> "q" 'a' &amp;`;

const page = (id: string) => `${origin}/uploads/${id}`;
const html = (path: string, token?: string) =>
  app.api.get(path, { unchecked: 'an HTML page', ...(token ? { token } : {}) });

/** What a chat app's unfurler sees: open-graph-scraper fetching the page itself. */
async function unfurl(url: string, onlyOpenGraph = false) {
  const r = await ogs({
    url,
    onlyGetOpenGraphInfo: onlyOpenGraph,
    fetchOptions: { headers: { 'user-agent': 'Slackbot-LinkExpanding 1.0' } },
  });
  assert.equal(r.error, false, JSON.stringify(r.result));
  return { og: r.result, html: r.html ?? '' };
}

/** The `href` of the head's `<link rel=…>` (and type), decoded as a browser would. */
function linkHref(doc: string, rel: string, type?: string): string | null {
  for (const tag of doc.match(/<link\b[^>]*>/g) ?? []) {
    const attr = (name: string) =>
      /* attribute values are double-quoted and escaped by the server */
      new RegExp(`\\s${name}="([^"]*)"`)
        .exec(tag)?.[1]
        ?.replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&') ?? null;
    if (attr('rel') === rel && (type === undefined || attr('type') === type)) return attr('href');
  }
  return null;
}

/** The `content` of every `<meta name="description">` in the document, decoded as a browser would. */
function descriptions(doc: string): string[] {
  return [...doc.matchAll(/<meta name="description" content="([^"]*)">/g)].map(([, v]) =>
    v!
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&'),
  );
}

async function moderate(id: string, action: 'hold' | 'remove') {
  const r = await app.api.post(
    `/api/admin/uploads/${id}/moderation`,
    { action, reason: `unfurl ${action}` },
    { token: admin.token },
  );
  assert.equal(r.status, 200, r.text);
}

before(async () => {
  app = await startApp();
  origin = new URL(app.url).origin;
  owner = await registerUser(app.api, `unfurl_${Math.random().toString(36).slice(2, 8)}`);
  admin = await registerAdmin(app);
  const img = await uploadImage(app.api, owner.token, await pngImage(1600, 1200, 3101), {
    description: LONG,
    tags: 'kitten, sleepy cats',
  });
  assert.equal(img.status, 201, img.text);
  imageId = img.body.id;
  const link = await uploadFields(app.api, owner.token, {
    upload_type: 'link',
    external_url: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ',
    description: 'The song everyone knows',
    tags: 'music',
  });
  assert.equal(link.status, 201, link.text);
  linkId = link.body.id;
  const secret = await uploadImage(app.api, owner.token, await pngImage(640, 480, 3102), {
    description: 'my secret kitten',
    is_private: 'true',
  });
  assert.equal(secret.status, 201, secret.text);
  privateId = secret.body.id;
  const ids: string[] = [];
  for (const what of ['held', 'removed']) {
    const r = await uploadFields(app.api, owner.token, {
      upload_type: 'link',
      external_url: `https://example.com/${what}`,
      description: `a ${what} link`,
    });
    assert.equal(r.status, 201, r.text);
    ids.push(r.body.id);
  }
  [heldId, removedId] = ids as [string, string];
  await moderate(heldId, 'hold');
  await moderate(removedId, 'remove');
});
after(() => app.close());

describe('an image upload unfurls', () => {
  test('title, description, the medium image with its real size and type, canonical URL, card', async () => {
    const { og, html: doc } = await unfurl(page(imageId));
    assert.equal(og.ogTitle, `${LONG.slice(0, 69).trimEnd()}…`);
    assert.ok((og.ogTitle ?? '').length <= 70);
    assert.equal(og.ogType, 'article');
    assert.equal(og.ogSiteName, 'pixvote');
    assert.equal(og.ogUrl, page(imageId));
    assert.equal(og.ogDescription, LONG);
    assert.equal(og.twitterCard, 'summary_large_image');
    assert.equal(linkHref(doc, 'canonical'), page(imageId));
    assert.match(doc, /<title>A kitten asleep on a warm keyboard[^<]*… · pixvote<\/title>/);
    assert.match(doc, /<meta name="description" content="A kitten asleep/);
    assert.doesNotMatch(doc, /noindex/);
    const [image] = og.ogImage ?? [];
    assert.ok(image, 'og:image');
    assert.equal(image.url, `${origin}/api/image/${imageId}?size=medium`);
    assert.equal(image.type, 'image/webp');
    assert.equal(Number(image.width), 1024);
    assert.equal(Number(image.height), 768);
    assert.equal(image.alt, LONG);
    // The image is what the tags say it is.
    const bytes = await fetch(image.url);
    assert.equal(bytes.status, 200);
    assert.equal(bytes.headers.get('content-type'), 'image/webp');
    const meta = await sharp(Buffer.from(await bytes.arrayBuffer())).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 1024, 768]);
  });

  test('the oEmbed discovery link answers oEmbed 1.0 JSON: a photo, the largest variant in the box', async () => {
    const { html: doc } = await unfurl(page(imageId));
    const href = linkHref(doc, 'alternate', 'application/json+oembed');
    assert.ok(href, 'oEmbed discovery link');
    const discovered = new URL(href, page(imageId));
    assert.equal(discovered.searchParams.get('url'), page(imageId));
    assert.equal(discovered.searchParams.get('format'), 'json');
    const r = await app.api.get(`${discovered.pathname}${discovered.search}`);
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(r.body, {
      version: '1.0',
      type: 'photo',
      title: `${LONG.slice(0, 69).trimEnd()}…`,
      author_name: owner.username,
      author_url: `${origin}/u/${owner.username}`,
      provider_name: 'pixvote',
      provider_url: `${origin}/`,
      cache_age: 3600,
      url: `${origin}/api/image/${imageId}?size=full`,
      width: 1600,
      height: 1200,
      thumbnail_url: `${origin}/api/image/${imageId}?size=thumb`,
      thumbnail_width: 320,
      thumbnail_height: 240,
    });
    const sized = async (q: string) => {
      const s = await app.api.get(`/api/oembed?url=${encodeURIComponent(page(imageId))}${q}`);
      assert.equal(s.status, 200, s.text);
      return [s.body.url.replace(/^.*size=/, ''), s.body.width, s.body.height];
    };
    assert.deepEqual(await sized('&maxwidth=1200'), ['medium', 1024, 768]);
    assert.deepEqual(await sized('&maxwidth=2000&maxheight=800'), ['medium', 1024, 768]);
    assert.deepEqual(await sized('&maxwidth=700'), ['thumb', 320, 240]);
    assert.deepEqual(await sized('&maxwidth=160'), ['thumb', 160, 120]);
  });
});

describe('a link upload unfurls', () => {
  test('a summary card naming the provider and the URL; oEmbed type link', async () => {
    const { og, html: doc } = await unfurl(page(linkId));
    assert.equal(og.ogTitle, 'The song everyone knows');
    assert.equal(og.ogUrl, page(linkId));
    assert.equal(og.twitterCard, 'summary');
    assert.match(og.ogDescription ?? '', /youtube/);
    assert.ok(og.ogDescription?.includes('https://www.youtube.com/watch?v=dQw4w9WgXcQ'), og.ogDescription);
    assert.equal(og.ogImage, undefined);
    const href = linkHref(doc, 'alternate', 'application/json+oembed');
    assert.ok(href);
    const r = await app.api.get(href);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.type, 'link');
    assert.equal(r.body.version, '1.0');
    assert.equal(r.body.title, 'The song everyone knows');
    assert.equal(r.body.url, undefined);
  });
});

describe('what is not public describes nothing', () => {
  const oembed = (url: string, q = '') => app.api.get(`/api/oembed?url=${encodeURIComponent(url)}${q}`);

  test('a private upload: the page renders (unlisted) but carries no metadata and is noindex', async () => {
    const r = await html(`/uploads/${privateId}`);
    assert.equal(r.status, 200);
    assert.doesNotMatch(r.text, /og:|twitter:|oembed|rel="canonical"|name="description"/);
    assert.match(r.text, /<meta name="robots" content="noindex">/);
    assert.doesNotMatch(r.text.replace(/<main[\s\S]*<\/main>/, ''), /secret/, 'the head says nothing');
    assert.match(r.text, /<p class="description">my secret kitten<\/p>/);
    const { og } = await unfurl(page(privateId), true);
    assert.equal(og.ogTitle, undefined);
    assert.equal(og.ogImage, undefined);
    assert.equal((await oembed(page(privateId))).status, 404);
  });

  test('held: 404 to strangers (HTML), the page to its owner without metadata; removed: 410', async () => {
    for (const [id, status, words] of [
      [heldId, 404, 'Upload not found'],
      [removedId, 410, 'This upload was removed'],
      [crypto.randomUUID(), 404, 'Upload not found'],
      ['not-an-id', 404, 'Upload not found'],
    ] as const) {
      const r = await html(`/uploads/${id}`);
      assert.equal(r.status, status, id);
      assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
      assert.ok(r.text.includes(`<h1>${words}</h1>`), r.text);
      assert.doesNotMatch(r.text, /og:|twitter:|oembed/);
      assert.match(r.text, /noindex/);
      assert.equal((await oembed(`${origin}/uploads/${id}`)).status, 404, id);
    }
    const mine = await html(`/uploads/${heldId}`, owner.token);
    assert.equal(mine.status, 200);
    assert.match(mine.text, /<span class="badge warn">held<\/span>/);
    assert.doesNotMatch(mine.text, /og:|twitter:|oembed/);
    const tombstone = await html(`/uploads/${removedId}`, admin.token);
    assert.equal(tombstone.status, 200);
    assert.doesNotMatch(tombstone.text, /og:|twitter:|oembed/);
  });

  test('oEmbed: another site, another page, a format other than json', async () => {
    assert.equal((await oembed(`https://elsewhere.example/uploads/${imageId}`)).status, 404);
    assert.equal((await oembed(`${origin}/?tag=kitten`)).status, 404);
    assert.equal((await oembed(`${origin}/api/upload/${imageId}`)).status, 404);
    assert.equal((await oembed('not a url')).status, 404);
    const xml = await oembed(page(imageId), '&format=xml');
    assert.equal(xml.status, 501);
    assert.equal(xml.body.error, 'not_implemented');
    assert.match(xml.body.message, /json/);
    assert.equal((await oembed(page(imageId), '&maxwidth=wide')).status, 400);
    assert.equal((await app.api.get('/api/oembed')).status, 400);
  });
});

describe('hostile strings', () => {
  test('a description with markup is escaped in the head and the body, and read back intact', async () => {
    const r = await uploadImage(
      app.api,
      owner.token,
      await pngImage(400, 300, 3103),
      { description: PWN, tags: 'plain' },
      `${PWN}.png`,
    );
    assert.equal(r.status, 201, r.text);
    const doc = (await html(`/uploads/${r.body.id}`)).text;
    assert.doesNotMatch(doc, /<b id="injected"|<img src=x|<script>window|<\/title><b/, 'no markup from the strings');
    const escaped = PWN.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
    assert.ok(doc.includes(`<p class="description">${escaped.replace(/'/g, '&#39;')}</p>`), 'the body');
    const { og } = await unfurl(page(r.body.id));
    // The scraper reads back exactly the string (its first 70 characters): nothing was lost or broke out.
    assert.equal(og.ogTitle, `${PWN.replace(/\s+/g, ' ').slice(0, 69).trimEnd()}…`);
    assert.equal(og.ogDescription, PWN);
    assert.equal(og.ogImage?.[0]?.alt, PWN);
    assert.deepEqual(descriptions(doc), [PWN], 'the meta description, escaped, reads back as the description');
    const title = /<title>([^<]*)<\/title>/.exec(doc)?.[1] ?? '';
    assert.ok(title.startsWith('&lt;/title&gt;&lt;b id=&quot;injected&quot;'), title);
    const embed = await app.api.get(`/api/oembed?url=${encodeURIComponent(page(r.body.id))}`);
    assert.equal(embed.body.title, og.ogTitle);
  });
});

describe('every page describes itself (search results, previews)', () => {
  test('one meta description per page: the feed names its sort and tag, an upload its own', async () => {
    const cases: Array<[string, RegExp]> = [
      ['/', /^The newest images and links shared on pixvote\. /],
      ['/?sort=top', /^The top-voted images and links on pixvote/],
      ['/?sort=best&page=2', /^The best-rated images/],
      ['/?sort=bogus', /^The newest images/],
      ['/?sort=hot&tag=Sleepy%20Cats', /^Images and links tagged “sleepy-cats” on pixvote, hot first\. /],
      [`/uploads/${imageId}`, new RegExp(`^${LONG.slice(0, 40)}`)],
      [`/uploads/${linkId}`, /^The song everyone knows · A youtube link to www\.youtube\.com shared by /],
      ['/new', /^Upload an image/],
      ['/signin', /^Sign in to pixvote/],
      ['/signup', /^Create a pixvote account/],
      ['/modlog', /public moderation log/],
      [`/u/${owner.username}`, new RegExp(`^Public uploads shared by ${owner.username} on pixvote`)],
    ];
    for (const [path, expected] of cases) {
      const r = await html(path);
      assert.equal(r.status, 200, path);
      const found = descriptions(r.text);
      assert.equal(found.length, 1, `${path}: one description`);
      assert.match(found[0]!, expected, path);
      assert.ok(found[0]!.length >= 50 && found[0]!.length <= 320, `${path}: ${found[0]!.length} characters`);
    }
  });

  test("a tag from the address is escaped (and clipped) in the feed's description", async () => {
    const r = await html(`/?tag=${encodeURIComponent(PWN)}`);
    assert.doesNotMatch(r.text, /<b id="injected"|<img src=x|<script>window/, 'no markup from the query');
    const slug = PWN.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-');
    assert.deepEqual(descriptions(r.text), [
      `Images and links tagged “${[...slug].slice(0, 31).join('')}…” on pixvote, newest first. ` +
        'Everyone votes on every upload.',
    ]);
  });
});

describe('with JavaScript off', { skip: noBrowser }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser?.close());

  test('the upload page shows its image, description and tags as links to their feed', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const w = await watchedPage(context, app.url);
    const p = w.page;
    const response = await p.goto(page(imageId), { waitUntil: 'load' });
    assert.equal(response?.status(), 200);
    assert.equal(await p.locator('body[data-ready]').count(), 0, 'no script ran');
    const img = p.locator('main figure img');
    assert.equal(await img.getAttribute('src'), `/api/image/${imageId}?size=medium`);
    assert.equal(await img.getAttribute('alt'), LONG);
    assert.equal(await img.getAttribute('width'), '1024');
    const box = await img.boundingBox();
    assert.ok(box && box.width > 100 && box.height > 50, 'the image is laid out');
    assert.equal(await p.locator('main h1').innerText(), `Upload by ${owner.username}`);
    assert.equal(await p.locator('main .description').innerText(), LONG);
    assert.match(await p.locator('main .counts').innerText(), /0 upvotes/);
    assert.match(await p.title(), /^A kitten asleep/);
    const tags = p.locator('main .tags a');
    assert.deepEqual(await tags.allInnerTexts(), ['kitten', 'sleepy cats']);
    assert.equal(await tags.nth(1).getAttribute('href'), '/?tag=sleepy-cats');
    await Promise.all([p.waitForURL(`${app.url}/?tag=kitten`), tags.first().click()]);
    assert.equal(await p.locator('main .card').count(), 1, "the tag's feed, rendered by the server");
    await p.locator('main .card a.cardlink').click();
    await p.waitForURL(page(imageId));

    const link = await p.goto(page(linkId), { waitUntil: 'load' });
    assert.equal(link?.status(), 200);
    assert.equal(await p.locator('main .media a').getAttribute('href'), 'https://www.youtube.com/watch?v=dQw4w9WgXcQ');
    assert.equal(await p.locator('main .linkcard .provider').textContent(), 'youtube');

    const gone = await p.goto(`${origin}/uploads/${removedId}`, { waitUntil: 'load' });
    assert.equal(gone?.status(), 410);
    assert.equal(await p.locator('main h1').innerText(), 'This upload was removed');
    // With scripts off Chromium refuses the modules the page preloads (as "csp"): that is all it may refuse.
    const problems = w
      .take()
      .filter((x) => !/^HTTP 410: GET \S+\/uploads\/|status of 410 \(Gone\)$|\/assets\/[\w.]+\.js csp$/.test(x));
    assert.deepEqual(problems, [], 'nothing from another origin, nothing failed');
    await context.close();
  });
});
