import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import {
  createServer as createTcpServer,
  connect,
  type AddressInfo,
  type Server as TcpServer,
  type Socket,
} from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app.ts';
import { apiToken, registerAdmin, registerUser } from '../support/users.ts';
import { countUploads, uploadImage } from '../support/uploads.ts';
import { photoJpeg, pngImage, truncatedJpeg } from '../support/fixtures.ts';
import { pixvote } from '../support/cli.ts';
import { getPhotos } from '../support/photos.ts';

let app: TestApp;
/** Two uploads an hour: the third meets a 429 whose Retry-After is most of an hour. */
let limited: TestApp;
let token: string;
let home: string;
let photos: string;
before(async () => {
  // Two uploads per 5 s: the run below is sure to meet a 429 and has to wait it out. (At 2/2s a loaded machine took
  // over a second per upload, two at a time, and the third came after the window had moved on: no 429 to wait out.)
  app = await startApp({ RATE_LIMIT_UPLOAD: '2/5s' });
  limited = await startApp({ RATE_LIMIT_UPLOAD: '2/1h' });
  token = await apiToken(app.api, await registerUser(app.api));
  home = await mkdtemp(join(tmpdir(), 'pixvote-cli-home-'));
  photos = join(home, 'photos');
  await mkdir(join(photos, 'trip', 'day 2'), { recursive: true });
  await mkdir(join(photos, '.thumbnails'), { recursive: true });
  await writeFile(join(photos, 'a.jpg'), await photoJpeg({ seed: 8101 }));
  await writeFile(join(photos, 'trip', 'b.PNG'), await pngImage(300, 200, 8102));
  await writeFile(join(photos, 'trip', 'day 2', 'c.jpeg'), await photoJpeg({ seed: 8103 }));
  await writeFile(join(photos, 'trip', 'day 2', 'd.png'), await pngImage(240, 180, 8104));
  await writeFile(join(photos, 'trip', 'copy of a.jpg'), await photoJpeg({ seed: 8101 }));
  await writeFile(join(photos, 'notes.txt'), 'not an image');
  await writeFile(join(photos, '.thumbnails', 'e.jpg'), await photoJpeg({ seed: 8105 }));
});
after(async () => {
  await app.close();
  await limited.close();
  await rm(home, { recursive: true, force: true });
});

const summary = (stdout: string) => /done in [\d:]+: (.*) \(/.exec(stdout)?.[1];

test(
  'pixvote upload walks folders, waits out 429 as Retry-After says, ' + 'reports the duplicate apart, and exits 0',
  async () => {
    const r = await pixvote(
      [
        'upload',
        photos,
        '--url',
        app.url,
        '--token',
        token,
        '--tags',
        'Holiday,  Sea View ,holiday',
        '--private',
        '--concurrency',
        '2',
      ],
      { home },
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(summary(r.stdout), '4 uploaded, 0 already uploaded, 1 duplicates, 0 failed');
    // Exactly the whole seconds of Retry-After, with the reason, and no retry used up by it.
    assert.match(r.stdout, /waiting [1-9]\d*\.0 s before retrying .* \(429 rate_limited: .+; as Retry-After asks\)/);
    assert.match(r.stdout, /duplicates \(nothing new stored\):\n {2}.*copy of a\.jpg: same bytes as .*a\.jpg/);
    assert.doesNotMatch(r.stdout, /notes\.txt|\.thumbnails|e\.jpg/);
    // Not a terminal: plain lines with the counts, bytes, rate and ETA, no bar drawn in place.
    // eslint-disable-next-line no-control-regex -- an ANSI escape is what must not be there
    assert.doesNotMatch(r.stdout, /\r|\x1b\[/);
    assert.match(r.stdout, /^\[5\/5\] .*\/s, ETA \d+:\d\d\)$/m);
    assert.equal(await countUploads(app), 4);

    const id = /uploaded {2}.*a\.jpg → ([0-9a-f-]{36})/.exec(r.stdout)?.[1];
    const upload = await app.api.get(`/api/upload/${id}`);
    assert.deepEqual(
      upload.body.tags.map((t: { slug: string }) => t.slug),
      ['holiday', 'sea-view'],
    );
    assert.equal(upload.body.is_private, true);
  },
);

test('a re-run uploads nothing new; a file that fails makes the exit status non-zero', async () => {
  await writeFile(join(photos, 'trip', 'broken.jpg'), await truncatedJpeg());
  const r = await pixvote(
    [
      'upload',
      photos,
      join(photos, 'notes.txt'),
      '--url',
      app.url,
      '--token',
      token,
      '--tags',
      'holiday,sea view',
      '--private',
    ],
    { home },
  );
  assert.equal(r.code, 1, r.stdout + r.stderr);
  // The pre-check found the five files' bytes on the server: none was sent again; the broken one was, and failed.
  assert.equal(
    summary(r.stdout),
    '0 uploaded, 0 already uploaded, 0 duplicates, 1 failed, 1 skipped, 5 already there (not sent)',
  );
  assert.match(r.stdout, /^pre-check: 5 files already there, 0 blocked: not sent$/m);
  assert.match(r.stdout, /failed:\n {2}.*broken\.jpg: invalid_image: /);
  assert.match(r.stdout, /skipped .*notes\.txt: not a \.jpg/);
  assert.equal(await countUploads(app), 4);
});

test("the pre-check: another user's public copy is not sent again, blocked bytes are not sent at all", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-cli-check-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const other = await registerUser(app.api);
  const admin = await registerAdmin(app);
  const shared = await pngImage(200, 150, 8401);
  const banned = await pngImage(200, 150, 8402);
  const fresh = await pngImage(200, 150, 8403);
  const up = await uploadImage(app.api, other.token, shared);
  assert.equal(up.status, 201);
  const sha = createHash('sha256').update(banned).digest('hex');
  const block = await app.api.post('/api/admin/blocklist', { entries: [{ sha256: sha }] }, { token: admin.token });
  assert.equal(block.status, 200, JSON.stringify(block.body));
  await writeFile(join(dir, 'shared.png'), shared);
  await writeFile(join(dir, 'banned.png'), banned);
  await writeFile(join(dir, 'fresh.png'), fresh);
  const before = await countUploads(app);
  const r = await pixvote(['upload', dir, '--url', app.url, '--token', token], { home });
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^pre-check: 1 files already there, 1 blocked: not sent$/m);
  assert.match(r.stdout, new RegExp(`already {3}.*shared\\.png → ${up.body.id} \\(the server has these bytes`));
  assert.match(r.stdout, /banned\.png: blocked_content: .*\(not sent\)/);
  assert.equal(await countUploads(app), before + 1, 'only the fresh file was sent');
  // --no-check sends what it is given: the server answers the duplicate itself.
  await rm(join(dir, 'banned.png'));
  await rm(join(dir, 'fresh.png'));
  const again = await pixvote(
    ['upload', dir, '--url', app.url, '--token', token, '--no-check', '--resume', join(dir, 'resume.json')],
    { home },
  );
  assert.doesNotMatch(again.stdout, /pre-check/);
  assert.match(again.stdout, /1 duplicates/);
});

test('an upload the server holds for review is said held, and counted apart from the uploaded ones', async (t) => {
  // HUMAN_POLICY=hold: a photo with people is stored (201) with `moderation: "held"`, out of every listing; calling
  // it "uploaded" sent its owner looking for it in the feed.
  const hold = await startApp({ HUMAN_POLICY: 'hold' });
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-cli-held-'));
  t.after(async () => {
    await hold.close();
    await rm(dir, { recursive: true, force: true });
  });
  const people = (await getPhotos()).find((p) => p.name === 'three-men-portrait');
  assert.ok(people, 'the photo is in the set');
  await writeFile(join(dir, 'people.jpg'), await readFile(people.path));
  await writeFile(join(dir, 'plain.png'), await pngImage(240, 180, 8501));
  const holdToken = await apiToken(hold.api, await registerUser(hold.api));
  const r = await pixvote(['upload', dir, '--url', hold.url, '--token', holdToken], { home });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(summary(r.stdout), '1 uploaded, 1 held for review, 0 already uploaded, 0 duplicates, 0 failed');
  const id = /\] held {6}.*people\.jpg → ([0-9a-f-]{36}) \(held for review: /.exec(r.stdout)?.[1];
  assert.ok(id, r.stdout);
  assert.match(r.stdout, /\] uploaded {2}.*plain\.png → /);
  const admin = await registerAdmin(hold);
  assert.equal((await hold.api.get(`/api/upload/${id}`, { token: admin.token })).body.moderation, 'held');
});

test('pixvote upload with a refused token stops at the first 401 and says so', async () => {
  const r = await pixvote(['upload', photos, '--url', app.url, '--token', 'pv_not-a-token', '--concurrency', '1'], {
    home,
  });
  assert.equal(r.code, 1);
  assert.match(r.stdout, /unauthorized: token is invalid/);
  assert.match(r.stdout, /not sent: unauthorized/);
});

/** A TCP relay to the app that is not listening yet: the CLI's first attempts meet a refused connection. */
async function lateRelay(target: string): Promise<{ port: number; open(): Promise<void>; close(): Promise<void> }> {
  const probe = createTcpServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  const { hostname, port: targetPort } = new URL(target);
  const sockets = new Set<Socket>();
  let server: TcpServer | null = null;
  return {
    port,
    async open() {
      server = createTcpServer((s) => {
        const upstream = connect(Number(targetPort), hostname);
        for (const x of [s, upstream]) {
          sockets.add(x);
          x.on('error', () => x.destroy());
        }
        s.pipe(upstream).pipe(s);
      });
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
    async close() {
      for (const s of sockets) s.destroy();
      if (server) await new Promise((r) => server!.close(r));
    },
  };
}

test('pixvote upload retries through network errors until the server answers, saying so', async () => {
  // Each run meets a refused connection first: with the pre-check, the pre-check's request; without it
  // (--no-check), the file's upload. Either waits for the server in plain sight and then goes on.
  for (const [name, args, retried] of [
    ['late', [], /retrying the pre-check in \d+\.\d s \(ECONNREFUSED; retry 1 of 8\)/],
    ['late-no-check', ['--no-check'], /retrying .*f\.jpg in \d+\.\d s \(ECONNREFUSED; retry 1 of 8\)/],
  ] as const) {
    const relay = await lateRelay(app.url);
    const dir = join(home, name);
    await mkdir(dir);
    await writeFile(join(dir, 'f.jpg'), await photoJpeg({ seed: 8106 + args.length }));
    try {
      let opened: Promise<void> | null = null;
      const url = `http://127.0.0.1:${relay.port}`;
      const r = await pixvote(['upload', dir, ...args, '--url', url, '--token', token], {
        home,
        // The server "comes back" once the CLI has met the refused connection.
        onStdout: (chunk) => {
          if (/retrying .*ECONNREFUSED/.test(chunk)) opened ??= relay.open();
        },
      });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, retried);
      assert.equal(summary(r.stdout), '1 uploaded, 0 already uploaded, 0 duplicates, 0 failed');
    } finally {
      await relay.close();
    }
  }
});

/** A folder of `n` distinct photos. */
async function album(name: string, n: number, seed: number): Promise<string> {
  const dir = join(home, name);
  await mkdir(dir);
  for (let i = 0; i < n; i++) await writeFile(join(dir, `p${i}.jpg`), await photoJpeg({ seed: seed + i }));
  return dir;
}

test(
  'a Retry-After over --max-wait stops the run at once, says why, leaves the resume file; ' +
    'the next run skips what was done',
  async () => {
    const dir = await album('over-max-wait', 4, 8200);
    const limitedToken = await apiToken(limited.api, await registerUser(limited.api));
    const r = await pixvote(['upload', dir, '--url', limited.url, '--token', limitedToken, '--concurrency', '1'], {
      home,
    });
    assert.equal(r.code, 75, r.stdout + r.stderr);
    // The wait and its reason, in one line, and no attempt at sitting through it.
    assert.match(
      r.stdout,
      /^stopped: the server asks to wait (\d+ min \d+ s|1 h 0 min) \(429 rate_limited: .+\), longer than --max-wait 300 s; try again after .+ UTC$/m,
    );
    assert.doesNotMatch(r.stdout, /waiting .* before retrying/);
    assert.match(
      r.stdout,
      /stopped after [\d:]+: 2 uploaded, 0 already uploaded, 0 duplicates, 0 failed, 2 not sent \(/,
    );
    assert.equal(await countUploads(limited), 2);
    // The resume file sits beside the config, named by server, inputs and options.
    const resumeFile = /^resume file: (.+\.json) \(2 files done\); run the same command again to go on$/m.exec(
      r.stdout,
    )?.[1];
    assert.ok(resumeFile, r.stdout);
    assert.ok(resumeFile.startsWith(join(home, 'pixvote', 'resume')), resumeFile);
    assert.equal((await stat(resumeFile)).mode & 0o777, 0o600);
    const saved = JSON.parse(await readFile(resumeFile, 'utf8'));
    assert.equal(Object.keys(saved.done).length, 2);
    assert.equal(saved.server, limited.url);

    // The same command, pointed at a server that now allows (the resume file named, since the URL differs):
    // the two done are skipped without a request, the other two are sent, and the finished run removes the file.
    const before = await countUploads(app);
    const again = await pixvote(['upload', dir, '--url', app.url, '--token', token, '--resume', resumeFile], { home });
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.match(again.stdout, /resuming: 2 files done by an earlier run are skipped without a request/);
    assert.equal(summary(again.stdout), '2 uploaded, 0 already uploaded, 0 duplicates, 0 failed, 2 skipped');
    assert.equal(await countUploads(app), before + 2, 'the two done earlier were not sent');
    await assert.rejects(stat(resumeFile), { code: 'ENOENT' });
  },
);

test('SIGINT mid-run prints the summary, keeps the resume file and exits 130', async () => {
  const dir = await album('interrupted', 4, 8300);
  const limitedToken = await apiToken(limited.api, await registerUser(limited.api));
  const resumeFile = join(home, 'interrupted.resume.json');
  let signalled = false;
  const r = await pixvote(
    [
      'upload',
      dir,
      '--url',
      limited.url,
      '--token',
      limitedToken,
      '--concurrency',
      '1',
      '--max-wait',
      '7200',
      '--resume',
      resumeFile,
    ],
    {
      home,
      // Interrupted while it waits out the hour-long Retry-After of the third file.
      onStdout: (chunk, child) => {
        if (!signalled && /waiting \d+\.0 s before retrying/.test(chunk)) signalled = child.kill('SIGINT');
      },
    },
  );
  assert.ok(signalled, r.stdout);
  assert.equal(r.code, 130, r.stdout + r.stderr);
  assert.match(r.stdout, /429 rate_limited: .+; as Retry-After asks/);
  assert.match(r.stdout, /^interrupted: stopping/m);
  assert.match(r.stdout, /stopped after [\d:]+: 2 uploaded, 0 already uploaded, 0 duplicates, 0 failed, 2 not sent \(/);
  assert.match(r.stdout, /^resume file: .*interrupted\.resume\.json \(2 files done\)/m);
  assert.equal(Object.keys(JSON.parse(await readFile(resumeFile, 'utf8')).done).length, 2);
});
