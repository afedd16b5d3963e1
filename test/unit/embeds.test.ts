import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/domain/errors.ts';
import { buildEmbed, validateExternalUrl } from '../../src/domain/embeds.ts';
import type { EmbedProvider } from '../../src/domain/embeds.ts';

const YT = 'dQw4w9WgXcQ';
const YT_EMBED = `https://www.youtube-nocookie.com/embed/${YT}`;
const TRACK = '4uLU6hMCjMI75M1A2tKUQC';
const DID = 'did:plc:z72i7hdynmk6r22z27h6tvur';
const RKEY = '3k44deefqdk2g';
const IG = 'C1a2B3c4D5e';
const TH = 'C8H5FiCtESk';

/** [url, provider, embed_url] */
type Case = [string, EmbedProvider | null, string | null];

const PROVIDER_CASES: Record<EmbedProvider, Case[]> = {
  youtube: [
    [`https://www.youtube.com/watch?v=${YT}`, 'youtube', YT_EMBED],
    [`https://youtube.com/watch?feature=share&v=${YT}`, 'youtube', YT_EMBED],
    [`https://m.youtube.com/watch?v=${YT}`, 'youtube', YT_EMBED],
    [`https://music.youtube.com/watch?v=${YT}&list=RDAMVM`, 'youtube', YT_EMBED],
    [`https://youtu.be/${YT}?si=abc`, 'youtube', YT_EMBED],
    [`https://www.youtube.com/shorts/${YT}`, 'youtube', YT_EMBED],
    [`https://www.youtube.com/live/${YT}?feature=shared`, 'youtube', YT_EMBED],
    [`https://www.youtube.com/embed/${YT}`, 'youtube', YT_EMBED],
    [`https://www.youtube-nocookie.com/embed/${YT}`, 'youtube', YT_EMBED],
    [`HTTP://WWW.YOUTUBE.COM./watch?v=${YT}`, 'youtube', YT_EMBED],
    [`https://youtu.be/${YT}?t=90`, 'youtube', `${YT_EMBED}?start=90`],
    [`https://www.youtube.com/watch?v=${YT}&t=1m30s`, 'youtube', `${YT_EMBED}?start=90`],
    [`https://www.youtube.com/watch?v=${YT}&t=1h2m3s`, 'youtube', `${YT_EMBED}?start=3723`],
    [`https://www.youtube.com/embed/${YT}?start=45`, 'youtube', `${YT_EMBED}?start=45`],
    [`https://www.youtube.com/watch?v=${YT}&t=0`, 'youtube', YT_EMBED],
  ],
  spotify: [
    [`https://open.spotify.com/track/${TRACK}`, 'spotify', `https://open.spotify.com/embed/track/${TRACK}`],
    [
      `https://open.spotify.com/intl-de/track/${TRACK}?si=x`,
      'spotify',
      `https://open.spotify.com/embed/track/${TRACK}`,
    ],
    [
      'https://open.spotify.com/album/1DFixLWuPkv3KT3TnV35m3',
      'spotify',
      'https://open.spotify.com/embed/album/1DFixLWuPkv3KT3TnV35m3',
    ],
    [
      'https://open.spotify.com/playlist/37i9dQZF1DXcBWIGoYBM5M',
      'spotify',
      'https://open.spotify.com/embed/playlist/37i9dQZF1DXcBWIGoYBM5M',
    ],
    [
      'https://open.spotify.com/artist/0OdUWJ0sBjDrqHygGUXeCF',
      'spotify',
      'https://open.spotify.com/embed/artist/0OdUWJ0sBjDrqHygGUXeCF',
    ],
    [
      'https://open.spotify.com/episode/512ojhOuo1ktJprKbVcKyQ',
      'spotify',
      'https://open.spotify.com/embed/episode/512ojhOuo1ktJprKbVcKyQ',
    ],
    [
      'https://open.spotify.com/intl-pt-br/show/5CfCWKI5pZ28U0uOzXkDHe',
      'spotify',
      'https://open.spotify.com/embed/show/5CfCWKI5pZ28U0uOzXkDHe',
    ],
    [`https://open.spotify.com/embed/track/${TRACK}`, 'spotify', `https://open.spotify.com/embed/track/${TRACK}`],
    [`spotify:track:${TRACK}`, 'spotify', `https://open.spotify.com/embed/track/${TRACK}`],
    [
      'spotify:playlist:37i9dQZF1DXcBWIGoYBM5M',
      'spotify',
      'https://open.spotify.com/embed/playlist/37i9dQZF1DXcBWIGoYBM5M',
    ],
  ],
  bluesky: [
    [
      `https://bsky.app/profile/${DID}/post/${RKEY}`,
      'bluesky',
      `https://embed.bsky.app/embed/${DID}/app.bsky.feed.post/${RKEY}`,
    ],
    [
      `https://bsky.app/profile/${DID}/post/${RKEY}?ref_src=embed`,
      'bluesky',
      `https://embed.bsky.app/embed/${DID}/app.bsky.feed.post/${RKEY}`,
    ],
    [
      `https://bsky.app/profile/did:web:example.com/post/${RKEY}`,
      'bluesky',
      `https://embed.bsky.app/embed/did:web:example.com/app.bsky.feed.post/${RKEY}`,
    ],
    [`https://bsky.app/profile/alice.bsky.social/post/${RKEY}`, 'bluesky', null],
    [`https://bsky.app/profile/Bob.Example.COM/post/${RKEY}/`, 'bluesky', null],
  ],
  instagram: [
    [`https://www.instagram.com/p/${IG}/`, 'instagram', `https://www.instagram.com/p/${IG}/embed`],
    [`https://instagram.com/reel/${IG}/?igsh=xyz`, 'instagram', `https://www.instagram.com/reel/${IG}/embed`],
    [`https://www.instagram.com/reels/${IG}/`, 'instagram', `https://www.instagram.com/reel/${IG}/embed`],
    [`https://www.instagram.com/tv/${IG}`, 'instagram', `https://www.instagram.com/tv/${IG}/embed`],
    [`https://www.instagram.com/some.user_1/p/${IG}/`, 'instagram', `https://www.instagram.com/p/${IG}/embed`],
    [`https://instagr.am/p/${IG}/`, 'instagram', `https://www.instagram.com/p/${IG}/embed`],
  ],
  threads: [
    [`https://www.threads.net/@zuck/post/${TH}`, 'threads', `https://www.threads.com/@zuck/post/${TH}/embed`],
    [`https://threads.net/@zuck/post/${TH}/`, 'threads', `https://www.threads.com/@zuck/post/${TH}/embed`],
    [
      `https://www.threads.com/@some.user_2/post/${TH}?xmt=abc`,
      'threads',
      `https://www.threads.com/@some.user_2/post/${TH}/embed`,
    ],
    [`https://threads.com/@zuck/post/${TH}`, 'threads', `https://www.threads.com/@zuck/post/${TH}/embed`],
    [`https://www.threads.net/@zuck/post/${TH}/media`, 'threads', `https://www.threads.com/@zuck/post/${TH}/embed`],
  ],
  tumblr: [
    ['https://staff.tumblr.com/post/123456789', 'tumblr', null],
    ['https://staff.tumblr.com/post/123456789/some-slug', 'tumblr', null],
    ['https://www.tumblr.com/staff/123456789', 'tumblr', null],
    ['https://www.tumblr.com/staff/123456789/some-slug', 'tumblr', null],
    ['https://tumblr.com/staff/123456789', 'tumblr', null],
    ['https://www.tumblr.com/blog/view/my-blog/123456789', 'tumblr', null],
  ],
};

const NOT_PROVIDERS: Case[] = [
  // look-alike hosts
  [`https://youtube.com.evil.example/watch?v=${YT}`, null, null],
  [`https://evil-youtube.com/watch?v=${YT}`, null, null],
  [`https://www.youtube.com@evil.example/watch?v=${YT}`, null, null],
  [`https://www.yоutube.com/watch?v=${YT}`, null, null], // Cyrillic "о" → xn--
  [`https://xn--youtube-3ya.com/watch?v=${YT}`, null, null],
  [`https://youtube.co/watch?v=${YT}`, null, null],
  [`https://open.spotify.com.evil.example/track/${TRACK}`, null, null],
  [`https://bsky.app.evil.example/profile/${DID}/post/${RKEY}`, null, null],
  [`https://evilinstagram.com/p/${IG}/`, null, null],
  [`https://threads.net.evil.example/@zuck/post/${TH}`, null, null],
  ['https://staff.tumblr.com.evil.example/post/123456789', null, null],
  [`https://www.youtube.com:8443/watch?v=${YT}`, null, null],
  // wrong id lengths / charsets
  [`https://youtu.be/${YT.slice(0, 10)}`, null, null],
  [`https://youtu.be/${YT}X`, null, null],
  [`https://www.youtube.com/watch?v=${YT.slice(0, 10)}!`, null, null],
  [`https://open.spotify.com/track/${TRACK.slice(1)}`, null, null],
  [`https://open.spotify.com/track/${TRACK}_`, null, null],
  [`https://open.spotify.com/user/${TRACK}`, null, null],
  ['spotify:track:short', null, null],
  ['https://bsky.app/profile/did:plc:short/post/abc', null, null],
  ['https://www.instagram.com/p/abc/', null, null],
  ['https://www.tumblr.com/staff/12ab', null, null],
  // script injection attempts
  [`https://www.youtube.com/watch?v=${YT}"><script>alert(1)</script>`, null, null],
  [`https://www.youtube.com/embed/${YT}%22onload=alert(1)`, null, null],
  [`https://youtu.be/<script>alert(1)</script>`, null, null],
  ['https://bsky.app/profile/<script>/post/abc', null, null],
  [`https://bsky.app/profile/alice.bsky.social/post/${RKEY}"onmouseover="alert(1)`, null, null],
  [`https://www.threads.net/@zuck"><img src=x>/post/${TH}`, null, null],
  ['https://www.tumblr.com/<b>/123', null, null],
  // paths that are not posts
  ['https://www.youtube.com/', null, null],
  ['https://www.youtube.com/@somechannel', null, null],
  ['https://www.instagram.com/explore/tags/cats/', null, null],
  ['https://www.instagram.com/constructor/ABCDEFGH', null, null],
  ['https://www.tumblr.com/tagged/123', null, null],
  ['https://api.tumblr.com/post/123', null, null],
  ['https://www.tumblr.com/dashboard', null, null],
  ['https://www.threads.net/t/C8H5FiCtESk', null, null],
  ['https://example.com/watch?v=dQw4w9WgXcQ', null, null],
  ['javascript:alert(1)//youtube.com/watch?v=dQw4w9WgXcQ', null, null],
  ['ftp://www.youtube.com/watch?v=dQw4w9WgXcQ', null, null],
];

/** Every attribute value and text in generated HTML must be escaped. */
function assertSafeHtml(html: string): void {
  assert.doesNotMatch(html, /<script/i);
  assert.doesNotMatch(html, /\son\w+=/i);
  for (const [, value] of html.matchAll(/\s[\w-]+="([^"]*)"/g)) {
    assert.doesNotMatch(value as string, /[<>']|&(?!amp;|lt;|gt;|quot;|#39;)/, `unescaped attribute value: ${value}`);
  }
}

describe('buildEmbed', () => {
  for (const [provider, cases] of Object.entries(PROVIDER_CASES)) {
    describe(provider, () => {
      it('has at least five URL shapes', () => assert.ok(cases.length >= 5));
      for (const [url, expectedProvider, embedUrl] of cases) {
        it(url, () => {
          const embed = buildEmbed(new URL(url));
          assert.equal(embed.provider, expectedProvider);
          assert.equal(embed.embed_url, embedUrl);
          assert.ok(embed.html !== null && embed.html.length > 0);
          assertSafeHtml(embed.html);
          // iframes load the embed URL; the blockquote forms carry the post permalink for the provider's embed.js.
          if (embed.html.startsWith('<iframe'))
            assert.ok(embed.html.includes(`src="${embedUrl}"`), 'iframe loads embed_url');
        });
      }
    });
  }

  describe('not a provider', () => {
    for (const [url] of NOT_PROVIDERS) {
      it(url, () => assert.deepEqual(buildEmbed(new URL(url)), { provider: null, embed_url: null, html: null }));
    }
  });

  it('YouTube html is a lazy iframe with a title and allow list', () => {
    const { html } = buildEmbed(new URL(`https://youtu.be/${YT}?t=90`));
    assert.match(html ?? '', /^<iframe [^>]*src="https:\/\/www\.youtube-nocookie\.com\/embed\/dQw4w9WgXcQ\?start=90"/);
    assert.match(html ?? '', /title="YouTube video player"/);
    assert.match(html ?? '', /allow="[^"]*encrypted-media[^"]*"/);
    assert.match(html ?? '', /loading="lazy"/);
  });

  it('a hostile start time is dropped, not copied', () => {
    const embed = buildEmbed(new URL(`https://www.youtube.com/watch?v=${YT}&t=1"><script>alert(1)</script>`));
    assert.equal(embed.embed_url, YT_EMBED);
    assertSafeHtml(embed.html ?? '');
  });

  it('Bluesky by handle is the official blockquote linking the post', () => {
    const { html } = buildEmbed(new URL(`https://bsky.app/profile/alice.bsky.social/post/${RKEY}`));
    assert.match(
      html ?? '',
      /^<blockquote class="bluesky-embed" data-bluesky-uri="at:\/\/alice\.bsky\.social\/app\.bsky\.feed\.post\/3k44deefqdk2g">/,
    );
    assert.ok(html?.includes(`href="https://bsky.app/profile/alice.bsky.social/post/${RKEY}?ref_src=embed"`));
  });

  it('Instagram and Threads use their blockquote forms, with & escaped in attributes', () => {
    const ig = buildEmbed(new URL(`https://www.instagram.com/p/${IG}/`)).html ?? '';
    assert.match(
      ig,
      /^<blockquote class="instagram-media" data-instgrm-permalink="https:\/\/www\.instagram\.com\/p\/C1a2B3c4D5e\/\?utm_source=ig_embed&amp;utm_campaign=loading"/,
    );
    const th = buildEmbed(new URL(`https://www.threads.net/@zuck/post/${TH}`)).html ?? '';
    assert.match(
      th,
      /^<blockquote class="text-post-media" data-text-post-permalink="https:\/\/www\.threads\.com\/@zuck\/post\/C8H5FiCtESk"/,
    );
  });

  it('Tumblr is a link card to the post', () => {
    const { html } = buildEmbed(new URL('https://staff.tumblr.com/post/123456789/some-slug'));
    assert.ok(html?.includes('href="https://www.tumblr.com/staff/123456789"'));
    assert.ok(html?.includes('rel="noopener noreferrer nofollow"'));
  });
});

describe('validateExternalUrl', () => {
  const rejects = (raw: string, pattern: RegExp) =>
    assert.throws(
      () => validateExternalUrl(raw),
      (err: unknown) =>
        err instanceof AppError &&
        err.code === 'invalid_request' &&
        /external_url/.test(err.message) &&
        pattern.test(err.message),
    );

  it('accepts http and https URLs and returns the parsed URL', () => {
    assert.equal(validateExternalUrl(`https://youtu.be/${YT}`).hostname, 'youtu.be');
    assert.equal(validateExternalUrl('http://example.com/a?b=c').href, 'http://example.com/a?b=c');
  });

  it('accepts 2048 characters and refuses 2049', () => {
    const base = 'https://example.com/';
    assert.equal(validateExternalUrl(base + 'a'.repeat(2048 - base.length)).href.length, 2048);
    rejects(base + 'a'.repeat(2049 - base.length), /2048/);
  });

  it('refuses a URL that only grows past 2048 once percent-encoded', () => {
    rejects('https://example.com/' + ' x'.repeat(1000), /2048/);
  });

  it('refuses other schemes, user info, junk and empty input', () => {
    rejects('javascript:alert(1)', /http or https/);
    rejects('data:text/html,<script>alert(1)</script>', /http or https/);
    rejects('ftp://example.com/file', /http or https/);
    rejects(`spotify:track:${TRACK}`, /http or https/);
    rejects(`https://user:pass@www.youtube.com/watch?v=${YT}`, /user name or password/);
    rejects(`https://www.youtube.com@evil.example/watch?v=${YT}`, /user name or password/);
    rejects('not a url', /absolute http or https URL/);
    rejects('/relative/path', /absolute http or https URL/);
    rejects('', /required/);
  });
});
