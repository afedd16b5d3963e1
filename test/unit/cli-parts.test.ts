import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { idempotencyKey, normalizeTags } from '../../src/cli/upload.command.ts';
import { walkImages } from '../../src/cli/image-files.walker.ts';
import { ProgressReporter, formatBytes, formatDuration, statusLine } from '../../src/cli/progress.reporter.ts';
import { configPath } from '../../src/cli/cli-config.store.ts';
import { ResumeFile, defaultResumePath } from '../../src/cli/resume.store.ts';
import { promptPassword } from '../../src/cli/password.prompt.ts';

test('the Idempotency-Key depends on the bytes and every upload option, and on nothing else', () => {
  const sha = 'a'.repeat(64);
  const key = idempotencyKey(sha, { tags: ['cats'], isPrivate: false });
  assert.match(key, /^pixvote-cli-[0-9a-f]{64}$/);
  assert.equal(idempotencyKey(sha, { tags: ['cats'], isPrivate: false }), key);
  assert.notEqual(idempotencyKey('b'.repeat(64), { tags: ['cats'], isPrivate: false }), key);
  assert.notEqual(idempotencyKey(sha, { tags: ['cats'], isPrivate: true }), key);
  assert.notEqual(idempotencyKey(sha, { tags: ['cats', 'dogs'], isPrivate: false }), key);
});

test('tags are normalized as the server does, de-duplicated, and checked before anything is sent', () => {
  assert.deepEqual(normalizeTags([' Cute  Cats ', 'dogs', 'DOGS', '']), ['cute cats', 'dogs']);
  assert.throws(() => normalizeTags(['no/slash']), /tag "no\/slash"/);
  assert.throws(() => normalizeTags(Array.from({ length: 11 }, (_, i) => `t${i}`)), /the limit is 10/);
});

test(
  'walking finds images by extension, ' + 'skips hidden entries and symlinked folders, and lists a file once',
  async () => {
    const root = await mkdtemp(join(tmpdir(), 'pixvote-walk-'));
    try {
      await mkdir(join(root, 'b', 'c'), { recursive: true });
      await mkdir(join(root, '.cache'));
      for (const f of ['a.JPG', 'b/x.webp', 'b/c/y.gif', 'b/readme.md', '.cache/z.png', 'b/c/.hidden.png'])
        await writeFile(join(root, f), 'x');
      await symlink(join(root, 'b'), join(root, 'loop'));
      await symlink(join(root, 'a.JPG'), join(root, 'b', 'alias.jpg'));
      const r = await walkImages([root, join(root, 'a.JPG'), join(root, 'b', 'readme.md'), join(root, 'missing')]);
      assert.deepEqual(
        r.files.map((f) => f.path.slice(root.length + 1)),
        ['a.JPG', 'b/c/y.gif', 'b/x.webp'],
      );
      assert.deepEqual(r.skipped, [join(root, 'b', 'readme.md')]);
      assert.deepEqual(r.unreadable, [{ path: join(root, 'missing'), reason: 'no such file or directory' }]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  },
);

test('progress: sizes, durations, and a status line with files, bytes, rate and ETA', () => {
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(25 * 1024 * 1024), '25 MiB');
  assert.equal(formatDuration(65_000), '1:05');
  assert.equal(formatDuration(3_725_000), '1:02:05');
  assert.equal(formatDuration(Infinity), '--:--');
  const line = statusLine(
    { totalFiles: 10, totalBytes: 4 * 1048576, doneFiles: 5, doneBytes: 2 * 1048576, failed: 1, startedAt: 0 },
    2000,
    100,
  );
  assert.match(line, /^\[#+-+\] 5\/10 files {2}2\.0 MiB\/4\.0 MiB {2}1\.0 MiB\/s {2}ETA 0:02 {2}1 failed$/);
});

test(
  'progress while waiting out a Retry-After: the wait is shown with its reason, the ETA adds it, ' +
    'the rate leaves it out',
  () => {
    const p = { totalFiles: 4, totalBytes: 4 * 1048576, doneFiles: 2, doneBytes: 2 * 1048576, failed: 0, startedAt: 0 };
    // 2 MiB in 2 s, then a 10-minute wait from t = 2 s; now t = 62 s.
    const waiting = { ...p, pausedMs: 0, wait: { from: 2000, until: 602_000, reason: '429 rate_limited' } };
    const line = statusLine(waiting, 62_000, 140);
    assert.match(line, /1\.0 MiB\/s {2}ETA 9:02 {2}waiting 9:00 \(429 rate_limited\)$/, line);
    // Once the wait is over it no longer counts against the rate.
    const after = { ...p, pausedMs: 600_000, wait: null };
    assert.match(statusLine(after, 602_000, 140), /1\.0 MiB\/s {2}ETA 0:02$/);
    let tty = '';
    const bar = new ProgressReporter(
      { write: (s: string) => (tty += s), isTTY: true, columns: 140 },
      { files: 2, bytes: 200 },
    );
    bar.waiting(Date.now() + 90_000, '503 busy');
    bar.finish();
    assert.match(tty, /waiting 1:3\d \(503 busy\)/);
  },
);

test('progress on a terminal redraws one bar in place; elsewhere it writes plain numbered lines', () => {
  let tty = '';
  const bar = new ProgressReporter(
    { write: (s: string) => (tty += s), isTTY: true, columns: 100 },
    { files: 2, bytes: 200 },
  );
  bar.fileDone(100, false, 'uploaded a.jpg');
  bar.finish();
  // eslint-disable-next-line no-control-regex -- the ANSI escapes that redraw the bar
  assert.match(tty, /\r\x1b\[2Kuploaded a\.jpg\n\r\x1b\[2K\[#+-+\] 1\/2 files/);
  let plain = '';
  const lines = new ProgressReporter({ write: (s: string) => (plain += s) }, { files: 2, bytes: 200 });
  lines.fileDone(100, true, 'FAILED b.jpg');
  lines.finish();
  assert.match(plain, /^\[1\/2\] FAILED b\.jpg {2}\(100 B\/200 B, .*\/s, ETA .*\)\n$/);
});

test('the config lives in $XDG_CONFIG_HOME/pixvote, else ~/.config/pixvote', () => {
  assert.equal(configPath({ XDG_CONFIG_HOME: '/x/conf', HOME: '/home/u' }), '/x/conf/pixvote/config.json');
  assert.equal(configPath({ HOME: '/home/u' }), '/home/u/.config/pixvote/config.json');
  assert.equal(
    configPath({ XDG_CONFIG_HOME: 'relative', HOME: '/home/u' }),
    '/home/u/.config/pixvote/config.json',
    'a relative XDG path is ignored, as the spec says',
  );
});

test('the password prompt reads keystrokes without echoing them; backspace and Ctrl-C work', async () => {
  const fakeTty = () =>
    Object.assign(new PassThrough(), {
      isTTY: true,
      raw: false,
      setRawMode(this: { raw: boolean }, on: boolean) {
        this.raw = on;
        return this;
      },
    });
  const input = fakeTty();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (c) => (shown += c));
  const answer = promptPassword('password: ', input as never, output as never);
  input.write('hunterx\u007f2\r');
  assert.equal(await answer, 'hunter2');
  assert.equal(input.raw, false, 'raw mode is switched off again');
  assert.match(shown, /password: /);
  assert.doesNotMatch(shown, /hunter|\*/, 'nothing of the password is shown');
  assert.ok(shown.endsWith('\n'), 'the cursor moves to the next line');
  const cancelled = fakeTty();
  const p = promptPassword('password: ', cancelled as never, new PassThrough() as never);
  cancelled.write('abc\u0003');
  await assert.rejects(p, /cancelled/);
});

test(
  'the resume file: keyed by server, inputs and options; ' + 'written atomically; skips only unchanged files',
  async () => {
    const root = await mkdtemp(join(tmpdir(), 'pixvote-resume-'));
    try {
      const env = { XDG_CONFIG_HOME: root, HOME: root };
      const o = { server: 'https://a.example', paths: ['x', 'y'], tags: ['cats'], isPrivate: false };
      const path = defaultResumePath(o, env);
      assert.match(path, new RegExp(`^${root}/pixvote/resume/[0-9a-f]{24}\\.json$`));
      assert.equal(
        defaultResumePath({ ...o, paths: ['y', 'x'] }, env),
        path,
        'the order of the inputs does not matter',
      );
      for (const other of [
        { server: 'https://b.example' },
        { paths: ['x'] },
        { tags: ['dogs'] },
        { isPrivate: true },
      ]) {
        assert.notEqual(defaultResumePath({ ...o, ...other }, env), path);
      }

      await writeFile(join(root, 'a.jpg'), 'aaaa');
      await writeFile(join(root, 'b.jpg'), 'bbbb');
      const fileOf = async (name: string) => {
        const s = await stat(join(root, name));
        return { path: join(root, name), size: s.size, mtimeMs: s.mtimeMs };
      };
      const first = await ResumeFile.open(path, o);
      first.record(await fileOf('a.jpg'), 'uploaded', 'id-a');
      first.record(await fileOf('b.jpg'), 'duplicate', 'id-b');
      await first.flush();
      assert.deepEqual((await readdir(join(root, 'pixvote', 'resume'))).length, 1, 'no temporary file left behind');
      assert.equal((await stat(path)).mode & 0o777, 0o600);
      assert.equal(JSON.parse(await readFile(path, 'utf8')).done[join(root, 'a.jpg')].id, 'id-a');

      await utimes(join(root, 'b.jpg'), new Date(), new Date(Date.now() + 60_000)); // b changed since
      const second = await ResumeFile.open(path, o);
      assert.equal(second.loaded, 2);
      assert.equal(second.isDone(await fileOf('a.jpg')), true);
      assert.equal(second.isDone(await fileOf('b.jpg')), false, 'a file changed since is sent again');
      await assert.rejects(ResumeFile.open(path, { ...o, tags: ['dogs'] }), /other --tags or --private/);
      await second.remove();
      await assert.rejects(stat(path), { code: 'ENOENT' });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  },
);
