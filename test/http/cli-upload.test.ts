import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createTcpServer, connect, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app.ts';
import { apiToken, registerUser } from '../support/users.ts';
import { countUploads } from '../support/uploads.ts';
import { photoJpeg, pngImage, truncatedJpeg } from '../support/fixtures.ts';
import { pixvote } from '../support/cli.ts';

let app: TestApp;
let token: string;
let home: string;
let photos: string;
before(async () => {
  // Two uploads per 2 s: the run below is sure to meet a 429 and has to wait it out.
  app = await startApp({ RATE_LIMIT_UPLOAD: '2/2s' });
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
  await rm(home, { recursive: true, force: true });
});

const summary = (stdout: string) => /done in [\d:]+: (.*) \(/.exec(stdout)?.[1];

test('pixvote upload walks folders, waits out 429 as Retry-After says, reports the duplicate apart, and exits 0', async () => {
  const r = await pixvote(['upload', photos, '--url', app.url, '--token', token, '--tags', 'Holiday,  Sea View ,holiday', '--private', '--concurrency', '2'], { home });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(summary(r.stdout), '4 uploaded, 0 already uploaded, 1 duplicates, 0 failed');
  assert.match(r.stdout, /retrying .* in \d+\.\d s \(429 rate_limited; retry 1\)/);
  assert.match(r.stdout, /duplicates \(nothing new stored\):\n {2}.*copy of a\.jpg: same bytes as .*a\.jpg/);
  assert.doesNotMatch(r.stdout, /notes\.txt|\.thumbnails|e\.jpg/);
  // Not a terminal: plain lines with the counts, bytes, rate and ETA, no bar drawn in place.
  // eslint-disable-next-line no-control-regex -- an ANSI escape is what must not be there
  assert.doesNotMatch(r.stdout, /\r|\x1b\[/);
  assert.match(r.stdout, /^\[5\/5\] .*\/s, ETA \d+:\d\d\)$/m);
  assert.equal(await countUploads(app), 4);

  const id = /uploaded {2}.*a\.jpg → ([0-9a-f-]{36})/.exec(r.stdout)?.[1];
  const upload = await app.api.get(`/api/upload/${id}`);
  assert.deepEqual(upload.body.tags.map((t: { slug: string }) => t.slug), ['holiday', 'sea-view']);
  assert.equal(upload.body.is_private, true);
});

test('a re-run uploads nothing new; a file that fails makes the exit status non-zero', async () => {
  await writeFile(join(photos, 'trip', 'broken.jpg'), await truncatedJpeg());
  const r = await pixvote(['upload', photos, join(photos, 'notes.txt'), '--url', app.url, '--token', token, '--tags', 'holiday,sea view', '--private'], { home });
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.equal(summary(r.stdout), '0 uploaded, 4 already uploaded, 1 duplicates, 1 failed, 1 skipped');
  assert.match(r.stdout, /failed:\n {2}.*broken\.jpg: invalid_image: /);
  assert.match(r.stdout, /skipped .*notes\.txt: not a \.jpg/);
  assert.equal(await countUploads(app), 4);
});

test('pixvote upload with a refused token stops at the first 401 and says so', async () => {
  const r = await pixvote(['upload', photos, '--url', app.url, '--token', 'pv_not-a-token', '--concurrency', '1'], { home });
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

test('pixvote upload retries through network errors until the server answers', async () => {
  const relay = await lateRelay(app.url);
  const dir = join(home, 'late');
  await mkdir(dir);
  await writeFile(join(dir, 'f.jpg'), await photoJpeg({ seed: 8106 }));
  try {
    let opened: Promise<void> | null = null;
    const r = await pixvote(['upload', dir, '--url', `http://127.0.0.1:${relay.port}`, '--token', token], {
      home,
      // The server "comes back" once the CLI has met the refused connection.
      onStdout: (chunk) => {
        if (/retrying .*ECONNREFUSED/.test(chunk)) opened ??= relay.open();
      },
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /retrying .*f\.jpg in \d+\.\d s \(ECONNREFUSED; retry 1\)/);
    assert.equal(summary(r.stdout), '1 uploaded, 0 already uploaded, 0 duplicates, 0 failed');
  } finally {
    await relay.close();
  }
});
