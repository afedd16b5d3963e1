/**
 * The one check of a redirect target (src/gateway/local-path.ts; issue 44): whatever path an attacker writes, the
 * browser resolving what the check returns stays on the origin. Property-based (fast-check): targets are built
 * from dot segments, slashes, backslashes, percent-encodings and control characters, and read as WHATWG URL (the
 * browser's parser) reads them.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { localPath } from '../../src/gateway/local-path.ts';
import { loadWebAssets } from '../../src/gateway/web-assets.ts';

const ORIGIN = 'http://127.0.0.1:8080';
const HOST = '127.0.0.1:8080';

/** The pieces a target is made of: each one the URL parser reads in some special way, or plain text. */
const PIECE = fc.oneof(
  fc.constantFrom('/', '\\', '//', '/\\', '\\/', '\\\\'),
  fc.constantFrom('.', '..', './', '../', '/.', '/..', '/./', '/../'),
  fc.constantFrom('%2e', '%2E', '.%2e', '%2e.', '%2E%2e', '%2f', '%2F', '%5c', '%5C', '%252e', '%09', '%0a', '%00'),
  fc.constantFrom('\t', '\n', '\r', '\f', '\v', ' ', '\0', '\x1f', '\x7f', '\u00a0', '\u3002', '\uff0e', '\uff0f'),
  fc.constantFrom('evil.example', HOST, 'a', 'x', 'new', '@', ':', 'http:', 'https:', '?', '#', '?next=//x', '%'),
  fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)),
);

/** A target: mostly starting with a slash or backslash (as an attacker's would), then any pieces. */
const TARGET = fc
  .tuple(fc.constantFrom('/', '/', '/', '\\', '', ' /', '\t/'), fc.array(PIECE, { maxLength: 14 }))
  .map(([start, rest]) => start + rest.join(''));

/** What the browser drops from a URL string before it parses it: tabs and newlines, C0 and space at the ends. */
const asBrowserReads = (s: string) => s.replace(/[\t\n\r]/g, '').replace(/^[\0-\x20]+|[\0-\x20]+$/g, '');

/** Asserts what must hold of the check's answer for `target`. */
function holds(target: string): void {
  const out = localPath(target, ORIGIN);
  const read = asBrowserReads(out);
  assert.ok(out.startsWith('/'), `${JSON.stringify(target)} → ${JSON.stringify(out)}: a path`);
  assert.doesNotMatch(
    read,
    /^[/\\]{2}/,
    `${JSON.stringify(target)} → ${JSON.stringify(out)}: a network-path reference`,
  );
  assert.equal(new URL(out, ORIGIN).origin, ORIGIN, `${JSON.stringify(target)} → ${JSON.stringify(out)} leaves`);
  // As a relative reference from any page of any origin, it stays on that origin: it names no host of its own.
  assert.equal(new URL(out, 'https://other.test:8443/deep/page?q#f').origin, 'https://other.test:8443');
  // Either the very place the browser would have gone to (an empty `?` or `#` aside), or the front page.
  const place = (u: URL) => u.pathname + u.search + u.hash;
  if (out !== '/') assert.equal(place(new URL(out, ORIGIN)), place(new URL(target, ORIGIN)));
  assert.equal(localPath(out, ORIGIN), out, 'a second check changes nothing');
}

describe('localPath: where a visitor may be sent back to', () => {
  it('never leads off the origin, and never answers a network-path reference (property)', () => {
    fc.assert(
      fc.property(TARGET, (t) => holds(t)),
      { numRuns: 20_000 },
    );
  });

  it('refuses the targets of issue 44 and those of the round before', () => {
    const attacks = [
      // Issue 44: paths that resolve to `//evil.example/x`.
      '/.//evil.example/x',
      '/..//evil.example/x',
      '/%2e//evil.example/x',
      '/%2E%2e//evil.example/x',
      '/./\\evil.example/x', // `next=/./%5Cevil.example/x`, decoded by the query string
      '/a/..//evil.example/x',
      '/a/b/../..//evil.example/x',
      '/.\t//evil.example/x',
      // The round before: tab, newlines and backslash between the slashes, scheme-relative, absolute.
      '/\t/evil.example/x',
      '/\n/evil.example/x',
      '/\r/evil.example/x',
      '/\\/evil.example/x',
      '//evil.example/x',
      '\\\\evil.example/x',
      'https://evil.example/x',
      'javascript:alert(1)',
      '//[',
      '',
    ];
    for (const target of attacks) {
      assert.equal(localPath(target, ORIGIN), '/', JSON.stringify(target));
      holds(target);
    }
  });

  it('keeps every path of this origin, as the browser resolves it', () => {
    const kept: Array<[string, string]> = [
      ['/', '/'],
      ['/new', '/new'],
      ['/new?tab=1#top', '/new?tab=1#top'],
      ['/uploads/3f2a?x=//evil.example', '/uploads/3f2a?x=//evil.example'],
      ['/a/../new', '/new'],
      ['/%2f/evil.example', '/%2f/evil.example'], // an encoded slash is a character of a segment, not a separator
      ['/%5c/evil.example', '/%5c/evil.example'],
      [`/\t/${HOST}/new`, '/new'], // `//<this host>/new`: this origin
      ['/u/b ob', '/u/b%20ob'],
    ];
    for (const [target, path] of kept) {
      assert.equal(localPath(target, ORIGIN), path, JSON.stringify(target));
      holds(target);
    }
  });

  it('is the very function the pages import (web/lib/local-path.js, generated from it)', async () => {
    const served = (await loadWebAssets()).module('local-path.js');
    assert.ok(served, 'web/lib/local-path.js is served');
    const url = `data:text/javascript;base64,${served.raw.toString('base64')}`;
    const page = ((await import(url)) as { localPath: typeof localPath }).localPath;
    assert.equal(page('/.//evil.example/x', ORIGIN), '/');
    fc.assert(
      fc.property(TARGET, (t) => page(t, ORIGIN) === localPath(t, ORIGIN)),
      { numRuns: 2_000 },
    );
  });

  it('takes only strings', () => {
    assert.equal(localPath(undefined, ORIGIN), '/');
    assert.equal(localPath(['/new'], ORIGIN), '/');
  });
});
