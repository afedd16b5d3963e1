/**
 * Every command in the guide runs as written. README.md and docs/*.md mark each ```sh block: `<!-- runs as written -->`
 * (run here) or `<!-- not run: why -->` (a block without either fails the first test). The marked blocks of each page
 * run in order, in one `bash -euo pipefail` per page, against one freshly started server (a real process, the default
 * rate limits), from a directory below the checkout holding cat.jpg and shots/. Each block exits 0, and the answers
 * the API walkthrough (docs/clients.md) prints are the ones its comments promise.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnServer } from '../support/process.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres, TEST_REDIS_URL } from '../support/env.ts';
import { dropRedisKeys, testRedisPrefix } from '../support/redis.ts';
import { photoJpeg, pngImage } from '../support/fixtures.ts';
import { ROOT } from '../support/start-command.ts';

const RUNS = '<!-- runs as written -->';
const NOT_RUN = /^<!-- not run: .+ -->$/;
/** The page whose blocks are the API walkthrough, with the assertions below. */
const WALKTHROUGH = 'docs/clients.md';

/** README.md and the guide's pages, relative to the checkout. */
async function pages(): Promise<string[]> {
  const docs = (await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).sort();
  return ['README.md', ...docs.map((f) => `docs/${f}`)];
}

interface ShellBlock {
  page: string;
  line: number;
  marker: string;
  code: string;
}

/** Every shell block of a page, with the line above its fence (blank lines skipped). */
async function shellBlocks(page: string): Promise<ShellBlock[]> {
  const lines = (await readFile(join(ROOT, page), 'utf8')).split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const close = lines.indexOf('```', i + 1);
    assert.ok(close > i, `${page}:${i + 1}: a code block that never closes`);
    if (['sh', 'bash', 'shell', 'console'].includes(fence[1]!)) {
      let above = i - 1;
      while (above >= 0 && lines[above]!.trim() === '') above--;
      blocks.push({
        page,
        line: i + 1,
        marker: lines[above]?.trim() ?? '',
        code: lines.slice(i + 1, close).join('\n'),
      });
    }
    i = close;
  }
  return blocks;
}

test('every shell block of README.md and docs/*.md says whether it runs as written', async () => {
  const unmarked: string[] = [];
  let runnable = 0;
  for (const page of await pages()) {
    for (const b of await shellBlocks(page)) {
      if (b.marker === RUNS) runnable++;
      else if (!NOT_RUN.test(b.marker)) unmarked.push(`${b.page}:${b.line}`);
    }
  }
  assert.deepEqual(unmarked, [], `mark each with ${RUNS} (then it must run here) or <!-- not run: why -->`);
  assert.ok(runnable >= 6, `${runnable} blocks run`);
});

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

test('every block marked runnable in README.md and docs/*.md runs as written against a fresh server', async () => {
  const byPage = new Map<string, string[]>();
  for (const page of await pages()) {
    const code = (await shellBlocks(page)).filter((b) => b.marker === RUNS).map((b) => b.code);
    if (code.length) byPage.set(page, code);
  }
  const walkthrough = byPage.get(WALKTHROUGH) ?? [];
  assert.ok(walkthrough.length >= 4, `${WALKTHROUGH}: found ${walkthrough.length} runnable blocks`);
  const all = [...byPage.values()].flat().join('\n');
  assert.doesNotMatch(all, /\bjq\b/, 'the guide needs no jq');
  // Within the default RATE_LIMIT_AUTH (5 per 15 minutes per IP), for every page together: one server runs them all.
  const count = (re: RegExp) => (all.match(re) ?? []).length;
  const authPosts = count(/-X POST \$BASE\/api\/auth -H/g) + count(/pixvote login/g);
  assert.ok(authPosts <= 4, `${authPosts} POST /api/auth: under the default limit of 5, with one to spare`);

  // The working directory the walkthrough asks for: below the checkout (npx pixvote finds the project), with
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
    const outputs = new Map<string, string>();
    // The walkthrough first (it registers the account the other pages may read), then the rest in order.
    const order = [WALKTHROUGH, ...[...byPage.keys()].filter((p) => p !== WALKTHROUGH)];
    for (const page of order) {
      const blocks = byPage.get(page)!;
      const run = await runInOneShell(blocks, work, {
        ...process.env,
        PIXVOTE_URL: server.url,
        XDG_CONFIG_HOME: join(work, 'config'),
        IMAGE_URL: '',
        // npx must run the checkout's own bin, never fetch a package of that name.
        npm_config_yes: 'false',
      });
      const failed =
        `${page}: block ${run.completed} failed (exit ${run.code}):\n${blocks[run.completed] ?? ''}\n` +
        `its output:\n${run.outputs[run.completed] ?? ''}\nstderr:\n${run.stderr.slice(-3000)}`;
      assert.equal(run.completed, blocks.length, failed);
      assert.equal(run.code, 0, failed);
      outputs.set(page, run.outputs.join(''));
    }
    // What the other pages' comments promise.
    assert.match(outputs.get('docs/install.md') ?? '', /^\{"status":"ok"\}$/m);
    assert.match(outputs.get('docs/scaling.md') ?? '', /^\{"status":"ok","checks":\{"database":/m);
    const out = outputs.get(WALKTHROUGH)!;
    const blocks = walkthrough.join('\n');

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
    // The OpenAPI version the walkthrough's comment says.
    const promised = /field openapi +# (\d+\.\d+\.\d+);/.exec(blocks)?.[1];
    assert.ok(promised, 'the walkthrough says which OpenAPI version the document is');
    assert.match(out, new RegExp(`^${promised.replaceAll('.', '\\.')}$`, 'm'));
    // Nothing was refused for a limit along the way, on any page.
    assert.doesNotMatch([...outputs.values()].join(''), /rate_limited/);

    // The CLI's upload of shots/ reached the server: both files are ada's, tagged as the walkthrough says.
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
