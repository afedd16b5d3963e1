/**
 * The pages' views (issue 47, src/gateway/views/) as the server writes them (src/gateway/web-render.ts,
 * `toHtml`): escaping in text and in attribute values, empty and void elements, left-out attributes and
 * children, and what the feed, card and modlog views write for their data. The browser builds the same trees
 * (test/http/web-views.test.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cardView, GENERATED, provenanceLabels, titleOf, type Upload } from '../../src/gateway/views/card-view.ts';
import { GENERATED_SOURCE_TYPES } from '../../src/domain/uploads/provenance.ts';
import { feedView, type FeedView } from '../../src/gateway/views/feed-view.ts';
import { modlogView } from '../../src/gateway/views/modlog-view.ts';
import { h } from '../../src/gateway/views/vnode.ts';
import { ago, utcDate } from '../../src/gateway/views/words.ts';
import { el, toHtml } from '../../src/gateway/web-render.ts';
import { HOSTILE, VIEW_UPLOAD } from '../support/view-fixtures.ts';

const HOSTILE_TEXT =
  '&lt;b id=&quot;injected&quot;&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot; &#39;single&#39; ' +
  '&lt;!-- --&gt; ]]&gt;';

describe('toHtml', () => {
  test('text and attribute values are escaped; attribute names and tags are written as the view names them', () => {
    assert.equal(
      toHtml(h('p', { title: HOSTILE, 'data-x': `a"b` }, HOSTILE)),
      `<p title="${HOSTILE_TEXT}" data-x="a&quot;b">${HOSTILE_TEXT}</p>`,
    );
    // Text that is itself markup-looking stays text at any depth, and next to elements.
    assert.equal(
      toHtml(h('ul', {}, h('li', {}, '<li>', h('a', { href: '/?a=1&b=2' }, '&amp;')))),
      '<ul><li>&lt;li&gt;<a href="/?a=1&amp;b=2">&amp;amp;</a></li></ul>',
    );
  });

  test('null, undefined and false leave an attribute out; true writes it bare; numbers as text', () => {
    assert.equal(
      toHtml(h('a', { class: 'more', hidden: true, 'aria-current': null, title: undefined, download: false }, 0)),
      '<a class="more" hidden>0</a>',
    );
    assert.equal(toHtml(h('input', { value: 0, maxlength: 40 })), '<input value="0" maxlength="40">');
  });

  test('children: null, undefined and booleans are left out, arrays flattened in order; void elements close', () => {
    const tree = h('p', null, ['a', null, ['b', false, [h('img', { src: 'x', alt: '' })]]], undefined, true, 'c');
    assert.deepEqual(tree.children.length, 4);
    assert.equal(toHtml(tree), '<p>ab<img src="x" alt="">c</p>');
    assert.equal(toHtml(h('p', { class: 'status', role: 'status' })), '<p class="status" role="status"></p>');
    assert.equal(toHtml([h('h1', {}, 'a'), 'b&']), '<h1>a</h1>b&amp;');
  });

  test('el writes markup children as they are (the server fragments), and escapes its attributes', () => {
    assert.equal(
      el('meta', { name: 'description', content: HOSTILE }),
      `<meta name="description" content="${HOSTILE_TEXT}">`,
    );
    assert.equal(el('b', {}, '<i>x</i>'), '<b><i>x</i></b>');
  });
});

const base = VIEW_UPLOAD;
const NOW = Date.parse('2026-11-27T12:00:00.000Z');

describe('cardView', () => {
  test('an image card signed out: the thumbnail sized to fit 320, counts as text, the age with its date', () => {
    assert.equal(
      toHtml(cardView(base, true, { signedIn: false, now: NOW })),
      '<li class="card"><a class="cardlink" href="/uploads/a%2Fb%3Fc">' +
        '<img src="/api/image/x?size=thumb&amp;y=&quot;1&quot;" alt="Image" width="320" height="1" loading="eager" ' +
        'fetchpriority="high" decoding="sync"><span class="title">Untitled image</span></a><p class="meta">' +
        '<span class="up" title="upvotes">▲ <span class="sr">upvotes: </span><span class="n-up">3</span></span>' +
        '<span class="down" title="downvotes">▼ <span class="sr">downvotes: </span>' +
        '<span class="n-down">0</span></span>' +
        '<span class="by">by <a href="/u/ada%20lovelace">ada lovelace</a></span>' +
        '<time datetime="2026-11-27T11:00:00.000Z" title="2026-11-27 11:00 UTC">1 hour ago</time></p></li>',
    );
  });

  test('signed in: vote buttons named by their content, pressed by the visitor’s vote; hostile text escaped', () => {
    const u = { ...base, description: HOSTILE, my_vote: 'does_not_fuck', is_private: true, moderation: 'held' };
    const html = toHtml(cardView(u, false, { signedIn: true, now: NOW }));
    assert.ok(!html.includes('<b id="injected">'));
    assert.ok(html.includes(`alt="${HOSTILE_TEXT}"`));
    assert.ok(html.includes('loading="lazy" decoding="async">'), html);
    assert.ok(html.includes('<button type="button" class="vote fucks" aria-pressed="false">'));
    assert.ok(html.includes('<button type="button" class="vote does_not_fuck" aria-pressed="true">'));
    assert.ok(html.includes(`<span class="sr">Downvote ${HOSTILE_TEXT}, downvotes: </span>`));
    assert.ok(html.includes('<span class="badge">Private</span><span class="badge warn">held</span>'));
  });

  test('link cards, long titles, tags', () => {
    const link = { ...base, upload_type: 'link' as const, image: null, external_url: 'https://example.com:8080/x' };
    const html = toHtml(
      cardView(
        { ...link, embed: { provider: HOSTILE, embed_url: null }, tags: [{ name: HOSTILE, slug: 'a b&c' }] },
        false,
        {
          signedIn: false,
          now: NOW,
        },
      ),
    );
    assert.ok(html.includes(`<span class="linkcard"><span class="provider">${HOSTILE_TEXT}</span>`), html);
    assert.ok(html.includes('<span class="host">example.com:8080</span></span><span class="title">example.com:8080'));
    assert.ok(
      html.endsWith(
        `<ul class="tags" aria-label="Tags"><li><a href="/?tag=a%20b%26c">${HOSTILE_TEXT}</a></li></ul></li>`,
      ),
    );
    assert.equal(titleOf({ ...link, external_url: 'not a url' }), 'Link');
    assert.equal(titleOf({ ...base, description: 'é'.repeat(95) }), `${'é'.repeat(89)}…`);
  });
});

describe('feedView and modlogView', () => {
  const feed: FeedView = {
    sort: 'top',
    tag: 'a&b',
    user: '',
    page: 1,
    cursor: 'c"1',
    uploads: [],
    hasMore: false,
    nextCursor: null,
    signedIn: false,
    now: NOW,
    maxTagLength: 40,
    eagerThumbnails: 6,
  };
  test('an empty feed reached by cursor: sorts, the tag filter with its value, the way to the newest', () => {
    const html = toHtml(feedView(feed));
    assert.ok(html.startsWith('<h1>Uploads tagged “a&amp;b”</h1><div class="controls">'), html);
    assert.ok(html.includes('<a href="/?sort=top&amp;tag=a%26b" aria-current="page">Top</a>'));
    assert.ok(html.includes('<input id="tag-filter" name="tag" value="a&amp;b" maxlength="40" autocomplete="off">'));
    assert.ok(html.includes('<input type="hidden" name="sort" value="top">'));
    assert.ok(html.includes('<p><a href="/?sort=top&amp;tag=a%26b">← Newest uploads</a></p>'));
    assert.ok(
      html.endsWith(
        '<ol class="grid" aria-label="Uploads"></ol><p class="status" role="status">No uploads with this tag yet.</p>' +
          '<a class="more button" href="/?sort=top&amp;tag=a%26b" hidden>More uploads</a>',
      ),
      html,
    );
  });
  test('the first thumbnails eager, the rest lazy; More uploads by the next cursor', () => {
    const uploads = Array.from({ length: 8 }, (_, i) => ({ ...base, id: `u${i}` }));
    const html = toHtml(feedView({ ...feed, tag: '', cursor: null, uploads, hasMore: true, nextCursor: 'n&1' }));
    assert.equal(html.match(/loading="eager"/g)?.length, 6);
    assert.equal(html.match(/loading="lazy"/g)?.length, 2);
    assert.ok(html.endsWith('<a class="more button" href="/?sort=top&amp;cursor=n%261">More uploads</a>'));
  });
  test('the modlog: moderators for admins only, unnamed uploads, hostile reasons and names escaped', () => {
    const entries = [
      { at: '2026-11-27T09:30:00.000Z', action: 'hold', reason: HOSTILE, target: { type: 'upload', id: null } },
      { at: 'x', action: 'ban_user', reason: null, target: { type: 'user', id: 'u', name: HOSTILE } },
    ];
    const pub = toHtml(modlogView({ entries, page: 2, cursor: null, nextCursor: 'z' }));
    assert.ok(!pub.includes('Moderator'));
    assert.ok(
      pub.includes(
        `<td><time datetime="2026-11-27T09:30:00.000Z">2026-11-27 09:30 UTC</time></td><td>hold</td>` +
          `<td>an upload (not public)</td><td>${HOSTILE_TEXT}</td></tr>`,
      ),
      pub,
    );
    assert.ok(pub.includes(`<td>ban user</td><td>user <b>${HOSTILE_TEXT}</b></td><td></td></tr>`), pub);
    assert.ok(
      pub.includes(
        '<nav class="pager" aria-label="Pages"><a href="/modlog">← Newer entries</a>' +
          '<a class="older" href="/modlog?cursor=z">Older entries →</a></nav>',
      ),
    );
    const admin = toHtml(
      modlogView({ entries: entries.map((e) => ({ ...e, moderator: null })), page: 1, cursor: null, nextCursor: null }),
    );
    assert.ok(admin.includes('<th scope="col">Moderator</th>'));
    assert.equal(admin.match(/<td>automatic<\/td>/g)?.length, 2);
    assert.ok(
      toHtml(modlogView({ entries: [], page: 1, cursor: null, nextCursor: null })).includes(
        '<p>No moderation actions yet.</p>',
      ),
    );
  });
});

test('ages by whole minutes, and the UTC date', () => {
  const offsets = [0, 59_999, 60_000, 119_999, 120_000, 3_599_999, 3_600_000, 7_200_000, 86_399_999, 86_400_000];
  const days = [2, 29, 30, 364, 365, 800].map((d) => d * 86_400_000);
  assert.deepEqual(
    [...offsets, ...days, -5_000].map((ms) => ago(new Date(NOW - ms).toISOString(), NOW)),
    [
      'just now',
      'just now',
      '1 minute ago',
      '1 minute ago',
      '2 minutes ago',
      '59 minutes ago',
      '1 hour ago',
      '2 hours ago',
      '23 hours ago',
      '1 day ago',
      '2 days ago',
      '29 days ago',
      '1 month ago',
      '12 months ago',
      '1 year ago',
      '2 years ago',
      'just now',
    ],
  );
  assert.equal(ago('not a date', NOW), 'not a date');
  assert.equal(utcDate('2020-02-29T23:59:59.999Z'), '2020-02-29 23:59 UTC');
  assert.equal(utcDate('nope'), null);
});

describe('provenanceLabels', () => {
  test("the view's generated terms are the domain's (it repeats them for the browser)", () => {
    assert.deepEqual([...GENERATED].sort(), [...GENERATED_SOURCE_TYPES].sort());
  });

  const upload = (fields: Partial<Upload>): Upload => ({ ...VIEW_UPLOAD, ...fields });
  const c2pa = (valid: boolean | null, type: string | null, signer: string | null = 'Acme <AI>') => ({
    present: true,
    valid,
    signer,
    actions: [{ digital_source_type: type }],
  });
  const text = (u: Upload) => {
    const node = provenanceLabels(u);
    return node === null ? null : toHtml(node);
  };

  test('says what the label rests on: the C2PA manifest and its signer, the IPTC metadata, the uploader', () => {
    assert.equal(
      text(upload({ ai_label: 'marker', provenance: { source_type: 'algorithmicMedia', c2pa: null } })),
      '<span class="provenance"><span class="badge ai">Made with AI (IPTC metadata in the file)</span></span>',
    );
    assert.equal(
      text(upload({ ai_label: 'owner', provenance: null })),
      '<span class="provenance"><span class="badge ai">Made with AI (marked by the uploader)</span></span>',
    );
    assert.equal(
      text(
        upload({ ai_label: 'marker', provenance: { source_type: null, c2pa: c2pa(true, 'trainedAlgorithmicMedia') } }),
      ),
      '<span class="provenance"><span class="badge ai">Made with AI (C2PA manifest, signed by Acme &lt;AI&gt;)</span>' +
        '<span class="badge cr">Content Credentials: Acme &lt;AI&gt;</span></span>',
    );
  });

  test('Content Credentials whenever a manifest is present: "not verified" (valid null), "invalid" (false)', () => {
    const camera = (valid: boolean | null) =>
      text(
        upload({ ai_label: null, provenance: { source_type: 'digitalCapture', c2pa: c2pa(valid, 'digitalCapture') } }),
      );
    assert.equal(
      camera(null),
      '<span class="provenance"><span class="badge cr">' +
        'Content Credentials: Acme &lt;AI&gt; (not verified)</span></span>',
    );
    assert.equal(
      camera(false),
      '<span class="provenance"><span class="badge cr">Content Credentials: Acme &lt;AI&gt; (invalid)</span></span>',
    );
    // Valid, but its signer is not among the configured trust anchors (self-signed, say).
    assert.match(
      text(upload({ provenance: { source_type: null, c2pa: { ...c2pa(true, null), trusted: false } } }))!,
      /Content Credentials: Acme &lt;AI&gt; \(untrusted signer\)</,
    );
    // A generated-says manifest that failed validation still labels, and says so.
    assert.match(
      text(
        upload({ ai_label: 'marker', provenance: { source_type: null, c2pa: c2pa(false, 'algorithmicMedia', null) } }),
      )!,
      /Made with AI \(C2PA manifest, signed by unknown signer \(invalid\)\)/,
    );
  });

  test('no marker and no manifest: no label at all (never claimed without a marker)', () => {
    assert.equal(text(upload({ ai_label: null, provenance: { source_type: null, c2pa: null } })), null);
    assert.equal(text(upload({})), null);
    assert.doesNotMatch(toHtml(cardView(upload({}), false, { signedIn: false, now: Date.now() })), /badge ai/);
  });
});
