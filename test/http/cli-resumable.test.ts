/**
 * `pixvote upload` through the tus endpoint (issue 49 item 5), as a real process against a real server, through an
 * HTTP relay the test controls that counts the file's bytes (PATCH bodies and the creation's first chunk): a run
 * killed (SIGKILL) at about 50 % is continued by the next run from the server's offset (at most one chunk sent
 * twice, one record); a connection cut
 * mid-chunk is continued within the run; an upload the server no longer has is sent afresh; small files go in one
 * direct request.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { startApp, type TestApp } from '../support/app.ts';
import { apiToken, registerUser } from '../support/users.ts';
import { countUploads } from '../support/uploads.ts';
import { photoJpeg, pngImage } from '../support/fixtures.ts';
import { pixvote } from '../support/cli.ts';
import type { Clock } from '../../src/domain/clock.ts';

const TUS = '/api/uploads/resumable';
const CHUNK = 64 * 1024;

/** The server's clock runs this far ahead (an upload's expiry without waiting a day). */
let skewMs = 0;
const clock: Clock = { now: () => new Date(Date.now() + skewMs) };
let app: TestApp;
let token: string;
let home: string;
before(async () => {
  app = await startApp({}, { clock });
  token = await apiToken(app.api, await registerUser(app.api));
  home = await mkdtemp(join(tmpdir(), 'pixvote-cli-tus-'));
});
after(async () => {
  await app.close();
  await rm(home, { recursive: true, force: true });
});

interface Seen {
  method: string;
  path: string;
  offset: number | null;
  /** Body bytes that reached the relay (for a cut PATCH, only those sent before the cut). */
  bytes: number;
}

/**
 * An HTTP relay to the app that records every request and counts the bytes of the file as they pass (PATCH bodies,
 * and the tus creation's, which carries the first chunk). `onBytes` sees their running total and the request in
 * flight (to cut it, or to kill the client).
 */
async function relay(onBytes?: (total: number, req: IncomingMessage) => void) {
  const seen: Seen[] = [];
  let patchBytes = 0;
  const target = new URL(app.url);
  const server: Server = createServer((req, res) => {
    const s: Seen = {
      method: req.method!,
      path: req.url!,
      offset: req.headers['upload-offset'] ? Number(req.headers['upload-offset']) : null,
      bytes: 0,
    };
    seen.push(s);
    const up = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.on('data', (c: Buffer) => {
      s.bytes += c.length;
      if (req.method === 'PATCH' || (req.method === 'POST' && req.url === TUS)) {
        patchBytes += c.length;
        onBytes?.(patchBytes, req);
      }
    });
    req.on('close', () => {
      if (!req.complete) up.destroy();
    });
    req.pipe(up);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    patchBytes: () => patchBytes,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

const summary = (stdout: string) => /done in [\d:]+: (.*) \(/.exec(stdout)?.[1];

async function folder(name: string, files: Record<string, Buffer>): Promise<string> {
  const dir = join(home, name);
  await mkdir(dir);
  for (const [f, bytes] of Object.entries(files)) await writeFile(join(dir, f), bytes);
  return dir;
}

const head = (url: string) =>
  fetch(app.url + url, { method: 'HEAD', headers: { 'tus-resumable': '1.0.0', authorization: `Bearer ${token}` } });

/**
 * A folder with one photo of ~640 KB, and a run that sends it through a relay in 64 KiB chunks and is killed
 * (SIGKILL) once `fraction` of its bytes have passed. Resolves what the next runs need.
 */
async function killedRun(name: string, seed: number, fraction: number) {
  const big = await photoJpeg({ width: 2048, height: 1536, seed });
  assert.ok(big.length > 8 * CHUNK, `fixture of ${big.length} bytes`);
  const dir = await folder(name, { 'big.jpg': big });
  const resumeFile = join(home, `${name}.resume.json`);
  let child: ChildProcess | null = null;
  let killed = false;
  const proxy = await relay((total) => {
    if (!killed && total >= big.length * fraction && child) killed = child.kill('SIGKILL');
  });
  const args = ['upload', dir, '--url', proxy.url, '--token', token, '--chunk-size', '64k', '--resume', resumeFile];
  const before = await countUploads(app);
  const first = await pixvote(args, { home, onStdout: (_, c) => (child ??= c) });
  assert.ok(killed, first.stdout + first.stderr);
  assert.equal(first.code, null, 'killed by the signal');
  return { big, dir, resumeFile, proxy, args, before };
}

test('a run killed at ~50 % is continued by the next from the server offset, one chunk twice at most', async () => {
  const { big, dir, resumeFile, proxy, args, before } = await killedRun('killed', 4950, 1 / 2);
  try {
    // The resume file already named the upload and the file's bytes.
    const saved = JSON.parse(await readFile(resumeFile, 'utf8'));
    const entry = saved.partial[join(dir, 'big.jpg')];
    assert.ok(entry, JSON.stringify(saved));
    assert.match(entry.url, new RegExp(`^${TUS}/[0-9a-f-]{36}$`));
    assert.equal(entry.size, big.length);
    assert.match(entry.sha256, /^[0-9a-f]{64}$/);
    const held = Number((await head(entry.url)).headers.get('upload-offset'));
    assert.ok(held > 0 && held < big.length, `the server holds ${held} of ${big.length} bytes`);
    const firstRun = proxy.seen.length;

    const second = await pixvote(args, { home });
    assert.equal(second.code, 0, second.stdout + second.stderr);
    // Where the server was when the next run asked (the killed chunk may have landed after the HEAD above).
    const offset = Number(new RegExp(`resuming .*big\\.jpg at (\\d+) of ${big.length} bytes`).exec(second.stdout)?.[1]);
    assert.ok(offset >= held && offset < big.length, second.stdout);
    assert.equal(summary(second.stdout), '1 uploaded, 0 already uploaded, 0 duplicates, 0 failed');
    const again = proxy.seen.slice(firstRun);
    assert.ok(!again.some((s) => s.method === 'POST' && s.path === TUS), 'no second creation');
    const patches = again.filter((s) => s.method === 'PATCH');
    assert.equal(patches[0]?.offset, offset, 'the next run went on from the server offset, not from byte 0');
    const twice = proxy.patchBytes() - big.length;
    assert.ok(twice >= 0 && twice <= CHUNK, `${twice} bytes sent twice (a chunk is ${CHUNK})`);
    assert.equal(await countUploads(app), before + 1, 'one record');
    await assert.rejects(stat(resumeFile), { code: 'ENOENT' });
  } finally {
    skewMs = 0;
    await proxy.close();
  }
});

test('a connection cut mid-chunk is continued within the run from HEAD; small files go directly', async () => {
  const big = await photoJpeg({ width: 2048, height: 1536, seed: 4951 });
  const small = await pngImage(120, 90, 4952);
  const dir = await folder('cut', { 'big.jpg': big, 'small.png': small });
  let cut = false;
  const proxy = await relay((total, req) => {
    if (!cut && total >= big.length / 2) {
      cut = true;
      req.socket.destroy();
    }
  });
  try {
    const before = await countUploads(app);
    const r = await pixvote(['upload', dir, '--url', proxy.url, '--token', token, '--chunk-size', '64k'], { home });
    assert.ok(cut);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(summary(r.stdout), '2 uploaded, 0 already uploaded, 0 duplicates, 0 failed');
    assert.match(r.stdout, /retrying .*big\.jpg in \d+\.\d s \(the connection dropped mid-chunk; retry 1 of 8\)/);
    assert.ok(
      proxy.seen.some((s) => s.method === 'HEAD'),
      'asked the offset',
    );
    const twice = proxy.patchBytes() - big.length;
    assert.ok(twice >= 0 && twice <= CHUNK, `${twice} bytes sent twice`);
    assert.equal(proxy.seen.filter((s) => s.method === 'POST' && s.path === TUS).length, 1, 'only the big one');
    assert.equal(proxy.seen.filter((s) => s.method === 'POST' && s.path === '/api/v1/upload').length, 1);
    assert.equal(await countUploads(app), before + 2);
  } finally {
    skewMs = 0;
    await proxy.close();
  }
});

test('an upload the server no longer has (expired) is sent afresh; the outcome is read as the direct one', async () => {
  const { big, dir, resumeFile, proxy, args } = await killedRun('gone', 4953, 1 / 3);
  try {
    const { url } = JSON.parse(await readFile(resumeFile, 'utf8')).partial[join(dir, 'big.jpg')];
    // A day later: the upload expired (RESUMABLE_TTL), and the sweep has not removed it yet. Its Idempotency-Key
    // (the file's) must make a new upload, not answer the expired one.
    skewMs = 25 * 60 * 60 * 1000;
    assert.equal((await head(url)).status, 404);
    const mark = proxy.seen.length;
    const r = await pixvote(args, { home });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /the server no longer has the upload .*big\.jpg began \(expired or deleted\)/);
    assert.ok(!proxy.seen.slice(mark).some((s) => s.method === 'PATCH' && s.path === url), 'not the expired upload');
    assert.equal(summary(r.stdout), '1 uploaded, 0 already uploaded, 0 duplicates, 0 failed');
    // Afresh: a new creation carrying the first chunk, then PATCHes from there.
    const resent = proxy.seen
      .slice(mark)
      .filter((s) => s.method === 'PATCH' || (s.method === 'POST' && s.path === TUS));
    assert.equal(resent[0]?.method, 'POST', 'afresh');
    assert.equal(resent[0]?.bytes, CHUNK, 'the first chunk in the creation');
    assert.equal(resent[1]?.offset, CHUNK);
    // The same bytes again, resumably: the result resource answers the duplicate notice, said as a duplicate.
    const copy = await folder('gone-copy', { 'copy.jpg': big });
    const dup = await pixvote(
      ['upload', copy, '--url', app.url, '--token', token, '--resumable', 'always', '--no-check', '--tags', 'again'],
      { home },
    );
    assert.equal(dup.code, 0, dup.stdout + dup.stderr);
    assert.equal(summary(dup.stdout), '0 uploaded, 0 already uploaded, 1 duplicates, 0 failed');
  } finally {
    skewMs = 0;
    await proxy.close();
  }
});
