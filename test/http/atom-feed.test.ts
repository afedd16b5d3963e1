/**
 * `GET /feed.atom` (issue 30): a listing's first page as an Atom feed, read back with a feed parser (feedsmith).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { parseAtomFeed } from 'feedsmith';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { renderAtom } from '../../src/gateway/atom-feed.ts';
import type { UploadView } from '../../src/domain/uploads/upload.types.ts';

let app: TestApp;
let alice: TestUser;
let bob: TestUser;
let origin: string;
const cats: string[] = [];
let imageId: string;
let privateId: string;

const HOSTILE = `</title><script>alert("x")</script> ]]> & 'q' \u0001\u0008\u000b\u001f\u007f\u0085 <![CDATA[ end`;
/** What XML 1.0 cannot carry (and the feed drops): C0 controls but tab/LF/CR, DEL, C1 controls. */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ud800-\udfff\ufffe\uffff]/;

const link = (u: TestUser, fields: Record<string, string> = {}) =>
  uploadFields(app.api, u.token, {
    upload_type: 'link',
    external_url: `https://example.com/${randomBytes(4).toString('hex')}`,
    ...fields,
  });

async function feed(query: string, headers: Record<string, string> = {}) {
  const r = await app.api.get(`/feed.atom${query}`, { headers });
  return { ...r, feed: r.status === 200 ? parseAtomFeed(r.text) : null };
}
const entryIds = (f: { entries?: Array<{ id?: string }> | undefined }) => (f.entries ?? []).map((e) => e.id);
const pageOf = (id: string) => `${origin}/uploads/${id}`;
async function listingIds(query: string): Promise<string[]> {
  const r = await app.api.get(`/api/uploads?limit=24&${query}`);
  assert.equal(r.status, 200);
  return r.body.uploads.map((u: { id: string }) => pageOf(u.id));
}

before(async () => {
  app = await startApp();
  origin = new URL(app.url).origin;
  alice = await registerUser(app.api, 'atom_alice');
  bob = await registerUser(app.api, 'atom_bob');
  for (let i = 0; i < 5; i++) {
    const r = await link(alice, { tags: 'cats', description: i === 0 ? '' : `cat number ${i}` });
    assert.equal(r.status, 201, r.text);
    cats.push(r.body.id);
  }
  const other = await link(bob, { tags: 'dogs', description: 'a dog' });
  assert.equal(other.status, 201);
  const img = await uploadImage(app.api, bob.token, await photoJpeg({ seed: 3001 }), {
    tags: 'cats',
    description: 'a cat picture',
  });
  assert.equal(img.status, 201, img.text);
  imageId = img.body.id;
  const hidden = await link(alice, { tags: 'cats', description: 'secret cat', is_private: 'true' });
  assert.equal(hidden.status, 201);
  privateId = hidden.body.id;
  // Top order differs from new: the oldest cat link gets two votes, the third one.
  const carol = await registerUser(app.api, 'atom_carol');
  for (const u of [carol, bob]) {
    const voted = await app.api.post('/api/vote', { uploadId: cats[0], vote: 'fucks' }, { token: u.token });
    assert.equal(voted.status, 200, voted.text);
  }
  const voted = await app.api.post('/api/vote', { uploadId: cats[2], vote: 'fucks' }, { token: bob.token });
  assert.equal(voted.status, 200, voted.text);
});
after(() => app.close());

describe('GET /feed.atom', () => {
  test("a tag's newest uploads, in the listing's order, with the feed's own links", async () => {
    const r = await feed('?sort=new&tag=cats');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/atom+xml; charset=utf-8');
    assert.equal(r.headers.get('cache-control'), 'public, max-age=120');
    assert.ok(r.headers.get('ratelimit-limit'), 'spends the general per-IP limit');
    const f = r.feed!;
    assert.equal(f.title?.value, 'pixvote — new uploads tagged cats');
    assert.ok(f.id);
    assert.deepEqual(entryIds(f), await listingIds('sort=new&tag=cats'));
    assert.deepEqual(entryIds(f), [imageId, ...[...cats].reverse()].map(pageOf));
    assert.ok(!entryIds(f).includes(pageOf(privateId)), 'private uploads are not in the feed');
    const links = f.links ?? [];
    assert.equal(links.find((l) => l.rel === 'self')?.href, `${origin}/feed.atom?sort=new&tag=cats`);
    assert.equal(links.find((l) => l.rel === 'alternate')?.href, `${origin}/?sort=new&tag=cats`);
    assert.equal(f.updated, f.entries![0]!.updated, 'updated: the newest entry');

    const oldest = f.entries!.at(-1)!;
    assert.equal(oldest.title?.value, 'Upload by atom_alice', 'no description: who uploaded it');
    assert.equal(oldest.authors?.[0]?.name, 'atom_alice');
    assert.equal(oldest.links?.find((l) => l.rel === 'alternate')?.href, pageOf(cats[0]!));
    assert.ok(oldest.published && oldest.updated);
    assert.equal(f.entries![1]!.title?.value, 'cat number 4');
  });

  test('top order, and the user and type filters', async () => {
    const top = (await feed('?sort=top&tag=cats')).feed!;
    assert.equal(top.title?.value, 'pixvote — top uploads tagged cats');
    assert.deepEqual(entryIds(top), await listingIds('sort=top&tag=cats'));
    assert.deepEqual(entryIds(top).slice(0, 2), [pageOf(cats[0]!), pageOf(cats[2]!)], 'most votes first');

    const byBob = (await feed('?user=atom_bob')).feed!;
    assert.equal(byBob.title?.value, 'pixvote — new uploads by atom_bob');
    assert.deepEqual(entryIds(byBob), await listingIds('user=atom_bob'));
    assert.equal(byBob.entries!.length, 2);
    assert.ok(byBob.entries!.every((e) => e.authors?.[0]?.name === 'atom_bob'));

    const images = (await feed('?type=image&user=atom_bob')).feed!;
    assert.deepEqual(entryIds(images), [pageOf(imageId)]);
    const image = images.entries![0]!;
    const medium = `${origin}/api/image/${imageId}?size=medium`;
    assert.deepEqual(
      image.links?.find((l) => l.rel === 'enclosure'),
      { href: medium, rel: 'enclosure', type: 'image/webp' },
    );
    assert.equal(image.content?.type, 'html');
    assert.ok(image.content?.value?.includes(`<img src="${medium.replace('&', '&amp;')}"`), image.content?.value);

    const links = (await feed('?type=link&tag=cats')).feed!;
    assert.deepEqual(entryIds(links), await listingIds('type=link&tag=cats'));
    const listed = (await app.api.get('/api/uploads?type=link&tag=cats&limit=24')).body.uploads;
    for (const [i, e] of links.entries!.entries()) {
      const url: string = listed[i].external_url;
      assert.equal(e.links?.find((l) => l.rel === 'related')?.href, url);
      assert.ok(e.content?.value?.includes(`<a href="${url}">`), 'the external URL in the content');
    }
  });

  test('invalid filters are 400 as on /api/uploads', async () => {
    for (const q of ['sort=random', 'type=video', `tag=${'x'.repeat(65)}`]) {
      const r = await app.api.get(`/feed.atom?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error, 'invalid_request', q);
    }
  });

  test('a hostile description parses and comes back as the same text, minus what XML cannot carry', async () => {
    const r = await link(alice, { tags: 'hostile', description: HOSTILE });
    assert.equal(r.status, 201, r.text);
    const got = await feed('?tag=hostile');
    assert.equal(got.status, 200);
    assert.ok(!UNSAFE.test(got.text), 'no character XML 1.0 forbids');
    assert.ok(!got.text.includes('<script>'), 'no markup from the description');
    const entry = got.feed!.entries![0]!;
    const clean = HOSTILE.replace(new RegExp(UNSAFE.source, 'g'), '');
    assert.equal(entry.summary?.value, clean);
    assert.equal(entry.title?.value, clean.replace(/\s+/g, ' ').trim());
    assert.ok(entry.content?.value?.includes('&lt;/title&gt;&lt;script&gt;'), 'escaped again inside the HTML');
  });

  test('ETag and Last-Modified: 304 either way, and a new upload changes the ETag', async () => {
    const first = await feed('?tag=cats&sort=new');
    const etag = first.headers.get('etag')!;
    const modified = first.headers.get('last-modified')!;
    assert.ok(etag && modified);
    assert.equal(new Date(modified).getTime(), Math.floor(Date.parse(first.feed!.updated!) / 1000) * 1000);

    const byTag = await feed('?tag=cats&sort=new', { 'if-none-match': etag });
    assert.equal(byTag.status, 304);
    assert.equal(byTag.text, '');
    assert.equal(byTag.headers.get('etag'), etag);
    const byDate = await feed('?tag=cats&sort=new', { 'if-modified-since': modified });
    assert.equal(byDate.status, 304);
    assert.equal(byDate.text, '');
    const earlier = new Date(Date.parse(modified) - 1000).toUTCString();
    assert.equal((await feed('?tag=cats&sort=new', { 'if-modified-since': earlier })).status, 200);
    // If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2).
    assert.equal(
      (await feed('?tag=cats&sort=new', { 'if-none-match': 'W/"other"', 'if-modified-since': modified })).status,
      200,
    );

    const added = await link(bob, { tags: 'cats', description: 'one more cat' });
    assert.equal(added.status, 201);
    const now = await feed('?tag=cats&sort=new', { 'if-none-match': etag });
    assert.equal(now.status, 200);
    assert.notEqual(now.headers.get('etag'), etag);
    assert.equal(now.feed!.entries![0]!.id, pageOf(added.body.id));
  });

  test('the feed page links its feed in the head', async () => {
    const page = (path: string) => app.api.get(path, { unchecked: 'an HTML page, not an API route' });
    const html = (await page('/?sort=top&tag=cats')).text;
    assert.match(
      html,
      /<link rel="alternate" type="application\/atom\+xml" title="pixvote — top uploads tagged cats" href="\/feed\.atom\?sort=top&amp;tag=cats">/,
    );
    assert.match(
      (await page('/')).text,
      /<link rel="alternate" type="application\/atom\+xml"[^>]* href="\/feed\.atom\?sort=new">/,
    );
  });
});

test('renderAtom: characters XML 1.0 forbids are dropped, lone surrogates too; empty feed is updated now', () => {
  const upload = {
    id: 'u1',
    username: 'x\u0000y',
    description: 'a\ud800b\uffffc\u0002',
    upload_type: 'link',
    external_url: 'https://example.com/?a=1&b=<2>',
    tags: [{ id: 't', name: 'C]]>ts', slug: 'cats' }],
    created_at: '2026-01-02T03:04:05.678Z',
    image: null,
  } as unknown as UploadView;
  const out = renderAtom({
    origin: 'https://pix.example',
    self: 'https://pix.example/feed.atom?sort=new',
    listing: { sort: 'new' },
    uploads: [upload],
    now: new Date(0),
  });
  assert.ok(!UNSAFE.test(out.xml));
  const f = parseAtomFeed(out.xml);
  assert.equal(f.entries![0]!.title?.value, 'abc');
  assert.equal(f.entries![0]!.authors?.[0]?.name, 'xy');
  assert.equal(f.entries![0]!.links?.find((l) => l.rel === 'related')?.href, 'https://example.com/?a=1&b=<2>');
  assert.equal(out.lastModified?.toISOString(), '2026-01-02T03:04:05.000Z');

  const empty = renderAtom({
    ...{ origin: 'https://pix.example', self: 's', listing: { sort: 'top' as const } },
    uploads: [],
    now: new Date(5000),
  });
  assert.equal(empty.lastModified, null);
  assert.equal(parseAtomFeed(empty.xml).updated, new Date(5000).toISOString());
  assert.equal(parseAtomFeed(empty.xml).entries?.length ?? 0, 0);
});
