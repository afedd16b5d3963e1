/**
 * bin/pixvote.js run where the `node` first on PATH is older than 22.17 (the machine's Node 20 here), as an
 * operator runs it outside `npm exec`: `node bin/pixvote.js …`, or the `pixvote` that `npm link` puts on PATH. The
 * README and docs/install.md say nothing is installed globally: the checkout's own Node 22 runs it, and without
 * one the advice is the checkout's `npm install`, never a global Node.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PIXVOTE_BIN } from '../support/cli.ts';

const oldNode = '/usr/bin/node';
const probe = spawnSync(oldNode, ['--version'], { encoding: 'utf8' });
const skip = probe.status !== 0 || !/^v(1\d|20|21)\./.test(probe.stdout) ? 'no Node older than 22 here' : false;
/** PATH as on a machine with only its own old Node: no node_modules/.bin of any checkout. */
const PATH = '/usr/local/bin:/usr/bin:/bin';
const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

test(
  "under an old Node, `node bin/pixvote.js` and an `npm link`ed `pixvote` run on the checkout's Node 22",
  { skip },
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'pixvote-launcher-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const direct = spawnSync(oldNode, [PIXVOTE_BIN, '--version'], { cwd: dir, env: { PATH }, encoding: 'utf8' });
    assert.equal(direct.status, 0, direct.stderr);
    assert.equal(direct.stdout, `${version}\n`);
    // What `npm link` makes: a symlink on PATH to the checkout's bin, whose `#!/usr/bin/env node` finds the old Node.
    await mkdir(join(dir, 'bin'));
    await symlink(PIXVOTE_BIN, join(dir, 'bin', 'pixvote'));
    const linked = spawnSync(join(dir, 'bin', 'pixvote'), ['--version'], {
      cwd: dir,
      env: { PATH: `${join(dir, 'bin')}:${PATH}` },
      encoding: 'utf8',
    });
    assert.equal(linked.status, 0, linked.stderr);
    assert.equal(linked.stdout, `${version}\n`);
  },
);

test(
  "under an old Node with no Node 22 installed beside it, the advice is the checkout's npm install, not a global one",
  { skip },
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'pixvote-launcher-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await mkdir(join(dir, 'bin'));
    await copyFile(PIXVOTE_BIN, join(dir, 'bin', 'pixvote.js'));
    const r = spawnSync(oldNode, [join(dir, 'bin', 'pixvote.js'), '--version'], {
      cwd: dir,
      env: { PATH },
      encoding: 'utf8',
    });
    assert.equal(r.status, 1);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /needs Node\.js >= 22\.17/);
    assert.match(r.stderr, new RegExp(`run \`npm install\` in ${dir}/ first`));
    assert.match(r.stderr, /`npx pixvote`/);
    assert.doesNotMatch(r.stderr, /install -g|--global/);
  },
);
