/**
 * The README's walkthrough ("Clients": the blocks marked `<!-- walkthrough: runs as written -->`) runs as
 * written: in order, in one `bash -euo pipefail`, against a freshly started server (a real process, default rate
 * limits), from a directory below the checkout holding cat.jpg and shots/. Each block exits 0, and the answers
 * it prints are the ones the README's comments promise.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnServer } from '../support/process.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { dropRedisKeys, testRedisPrefix } from '../support/redis.ts';
import { photoJpeg, pngImage } from '../support/fixtures.ts';
import { ROOT } from '../support/start-command.ts';

/** The marked ```sh blocks of the README's "Clients" section, in order. */
async function walkthroughBlocks(): Promise<string[]> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Clients\n');
  assert.ok(start >= 0, 'README has a "Clients" section');
  const next = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(/<!-- walkthrough: runs as written -->\n```sh\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
}

/** Runs the blocks in one bash, a marker line after each: the output of each block, and where it stopped. */
async function runInOneShell(blocks: string[], cwd: string, env: NodeJS.ProcessEnv) {
  const script = blocks.map((b, i) => `${b}\necho "@@block ${i} done@@"\n`).join('');
  const proc = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += d));
  proc.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => proc.on('close', resolve));
  const outputs = stdout.split(/^@@block \d+ done@@\n/m);
  return { code, stderr, outputs, completed: outputs.length - 1 };
}

test('the README walkthrough runs as written against a fresh server with the default limits', async () => {
  const blocks = await walkthroughBlocks();
  assert.ok(blocks.length >= 4, `found ${blocks.length} marked blocks`);
  const all = blocks.join('\n');
  assert.doesNotMatch(all, /\bjq\b/, 'the walkthrough needs no jq');
  // Within the default RATE_LIMIT_AUTH (5 per 15 minutes per IP): count what will POST /api/auth.
  const count = (re: RegExp) => (all.match(re) ?? []).length;
  const authPosts = count(/-X POST \$BASE\/api\/auth -H/g) + count(/pixvote login/g);
  assert.ok(authPosts <= 4, `${authPosts} POST /api/auth: under the default limit of 5, with one to spare`);

  // The working directory the README asks for: below the checkout (npx pixvote finds the project), with
  // cat.jpg and a folder shots/ (scratch/ is git-ignored).
  await mkdir(join(ROOT, 'scratch'), { recursive: true });
  const work = await mkdtemp(join(ROOT, 'scratch', 'walkthrough-'));
  await writeFile(join(work, 'cat.jpg'), await photoJpeg({ width: 1200, height: 800, seed: 4242 }));
  await mkdir(join(work, 'shots', 'more'), { recursive: true });
  await writeFile(join(work, 'shots', 'one.jpg'), await photoJpeg({ width: 800, height: 600, seed: 4343 }));
  await writeFile(join(work, 'shots', 'more', 'two.png'), await pngImage(640, 480, 4444));

  const database = onPostgres ? await createTestDatabase() : null;
  const redisPrefix = testRedisPrefix();
  const server = await spawnServer({
    DATA_DIR: join(work, 'data'),
    // The one non-default: the walkthrough's image_url is the server's own copy of the cat (a loopback address).
    FETCH_ALLOW_PRIVATE: 'true',
    ...(database ? { DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: redisPrefix } : {}),
  });
  try {
    const run = await runInOneShell(blocks, work, {
      ...process.env,
      PIXVOTE_URL: server.url,
      XDG_CONFIG_HOME: join(work, 'config'),
      IMAGE_URL: '',
      // npx must run the checkout's own bin, never fetch a package of that name.
      npm_config_yes: 'false',
    });
    const failed =
      `block ${run.completed} failed (exit ${run.code}):\n${blocks[run.completed] ?? ''}\n` +
      `its output:\n${run.outputs[run.completed] ?? ''}\nstderr:\n${run.stderr.slice(-3000)}`;
    assert.equal(run.completed, blocks.length, failed);
    assert.equal(run.code, 0, failed);
    const out = run.outputs.join('');

    // Accounts: registered once; /api/me by JWT and by cookie; the cookie logout; a token created and listed.
    assert.equal((out.match(/"username":"ada"/g) ?? []).length >= 2, true, out);
    assert.match(out, /\{"success":true\}/);
    assert.match(out, /"name":"ci uploader"/);
    // The narrowed token: made with its scope and expiry, then refused by name on a route outside it (not 401).
    assert.match(out, /"name":"uploads only"[^\n]*"scopes":\["upload"\],"expires_at":"\d{4}-/);
    assert.match(out, /^\{"error":"insufficient_scope","message":"this API token lacks the scope \\"read\\" /m);
    // Uploads: the exact duplicate, the near duplicate fetched by image_url, the 304, the 404, the 401.
    assert.match(out, /"duplicate":true,[^\n]*"match":"exact"/);
    assert.match(out, /"duplicate":true,[^\n]*"match":"near"/);
    assert.match(out, /^304$/m);
    assert.match(out, /^404$/m);
    assert.match(out, /^401$/m);
    assert.match(out, /"vote":"fucks"|"my_vote":"fucks"|"upvotes":1/);
    assert.match(out, /"slug":"cute-cats"/);
    assert.match(out, /"is_private":true/);
    // Operations.
    assert.match(out, /^ratelimit-limit: \d+$/im);
    assert.match(out, /\{"status":"ok"\}/);
    assert.match(out, /^# TYPE pixvote_/m);
    // The OpenAPI version the README's comment says.
    const promised = /field openapi +# (\d+\.\d+\.\d+);/.exec(all)?.[1];
    assert.ok(promised, 'the README says which OpenAPI version the document is');
    assert.match(out, new RegExp(`^${promised.replaceAll('.', '\\.')}$`, 'm'));
    // Nothing was refused for a limit along the way.
    assert.doesNotMatch(out, /rate_limited/);

    // The CLI's upload of shots/ reached the server: both files are ada's, tagged as the README says.
    const feed = await server.api.get('/api/uploads?user=ada&type=image&limit=50');
    const names = (feed.body as { uploads: Array<{ original_name: string }> }).uploads.map((u) => u.original_name);
    assert.deepEqual(names.filter((n) => n !== 'cat.jpg').sort(), ['one.jpg', 'two.png']);
  } finally {
    server.kill('SIGTERM');
    await server.exited;
    await database?.drop();
    if (database) await dropRedisKeys(redisPrefix);
    await rm(work, { recursive: true, force: true });
  }
});
