/**
 * What the pages' build (src/gateway/web-assets.ts) lets a page import, and where the upload form's resumable client
 * (tus-js-client, issue 49) goes: a bundle of its own that the form's bundle fetches with `import()`, not part of the
 * form's script.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadWebAssets, resolveImport } from '../../src/gateway/web-assets.ts';

const WEB = new URL('../../web/', import.meta.url);
const form = new URL('pages/new.js', WEB);

test('pages import modules of web/ and the listed packages, nothing else', () => {
  assert.equal(resolveImport('../lib/api.js', form).href, new URL('lib/api.js', WEB).href);
  assert.equal(resolveImport('thumbhash', form).pathname.endsWith('/thumbhash.js'), true);
  // tus-js-client one by one: its browser build with its dependencies, as one module the server makes.
  assert.equal(resolveImport('tus-js-client', form).href, new URL('tus-js-client.js', WEB).href);
  for (const specifier of [
    'url-parse', // a dependency of tus-js-client: bundled with it, never imported by a page
    'lodash',
    'node:fs',
    '/web/lib/api.js',
    'https://cdn.example/tus.js',
    '../../src/gateway/limits.ts',
    '../../package.json',
    '../lib/api.ts',
    'tus-js-client/lib/index.js',
  ]) {
    assert.throws(
      () => resolveImport(specifier, form),
      /pages import only \.js modules of web\/, thumbhash, tus-js-client/,
    );
  }
});

test("the upload form's bundle fetches the resumable client by import(), and carries none of it", async () => {
  const assets = await loadWebAssets();
  const client = assets.lazy('lib/resumable.js');
  assert.ok(client, 'the resumable client is a bundle of its own');
  assert.match(client.path, /^\/assets\/resumable\.[0-9a-f]{12}\.js$/);
  assert.equal(assets.byPath.get(client.path), client, 'served under its path');
  const formScript = assets.bundle('new').raw.toString();
  assert.deepEqual(
    [...formScript.matchAll(/\bimport\s*\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1]),
    [client.path],
  );
  // tus-js-client's protocol header is in the client's bundle, not in the form's script.
  const clientScript = client.raw.toString();
  assert.ok(clientScript.includes('Tus-Resumable'));
  assert.ok(!formScript.includes('Tus-Resumable'));
  // Its browser build: XHR, no Node module.
  assert.ok(clientScript.includes('XMLHttpRequest'));
  assert.doesNotMatch(clientScript, /\brequire\s*\(|node:|proper-lockfile/);
  // No other page fetches anything.
  for (const page of ['feed', 'upload', 'signin', 'profile', 'moderation', 'modlog'])
    assert.doesNotMatch(assets.bundle(page).raw.toString(), /\bimport\s*\(/, page);
});
