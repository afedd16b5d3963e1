import { describe, it, before } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { AppError } from '../../src/domain/errors.ts';
import { isForbiddenAddress } from '../../src/net/address-policy.ts';
import { fetchImage } from '../../src/net/safe-fetch.ts';
import type { FetchImageOptions } from '../../src/net/safe-fetch.ts';
import { disguised, v4Written } from '../support/address-forms.ts';

// ---------- fixtures ----------

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const JPEG = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00]),
  randomBytes(200_000),
]);
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const PRIVATE_OK = { timeoutMs: 5000, maxBytes: 1 << 20, allowPrivate: true } satisfies FetchImageOptions;
const STRICT = { timeoutMs: 5000, maxBytes: 1 << 20, allowPrivate: false } satisfies FetchImageOptions;

/** The real policy, except that one loopback address plays a public server on the internet. */
const pretendPublic = (publicIp: string) => (ip: string) => (ip === publicIp ? null : isForbiddenAddress(ip));

interface Served {
  port: number;
  origin: string;
  requests: number;
}

/** An HTTP server the test tears down. */
async function serve(t: TestContext, handler: http.RequestListener, host = '127.0.0.1', port = 0): Promise<Served> {
  const served: Served = { port: 0, origin: '', requests: 0 };
  const server = http.createServer((req, res) => {
    served.requests++;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  served.port = (server.address() as net.AddressInfo).port;
  served.origin = `http://${host}:${served.port}`;
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return served;
}

interface Trap {
  port: number;
  connections: number;
  bytes: number;
  /** Resolves when every accepted connection has closed. */
  settled(): Promise<void>;
}

/** A raw TCP listener that counts connections and bytes; answers with a PNG so a permitted fetch succeeds. */
async function trap(t: TestContext, host = '::', port = 0): Promise<Trap> {
  const closes: Promise<void>[] = [];
  const state: Trap = { port: 0, connections: 0, bytes: 0, settled: () => Promise.all(closes).then(() => {}) };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    closes.push(new Promise((resolve) => socket.on('close', () => resolve())));
    let head = '';
    socket.on('error', () => {});
    socket.on('data', (d) => {
      state.bytes += d.length;
      head += d.toString('latin1');
      if (head.includes('\r\n\r\n')) {
        socket.end(
          Buffer.concat([
            Buffer.from(
              'HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n' +
                `Content-Length: ${PNG.length}\r\nConnection: close\r\n\r\n`,
            ),
            PNG,
          ]),
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen({ port, host, ipv6Only: false }, resolve));
  state.port = (server.address() as net.AddressInfo).port;
  t.after(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return state;
}

async function rejectsWith(promise: Promise<unknown>, expected: string | RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.code, 'fetch_failed');
    if (typeof expected === 'string') assert.equal(err.message, expected);
    else assert.match(err.message, expected);
    return true;
  });
}

function pngHandler(_req: http.IncomingMessage, res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
}

/** Streams `first` then filler forever, honouring backpressure, until the client goes away. */
function endless(res: http.ServerResponse, first: Buffer): void {
  const filler = Buffer.alloc(16 * 1024, 0x41);
  res.write(first);
  const pump = () => {
    while (!res.destroyed && res.write(filler));
  };
  res.on('drain', pump);
  pump();
}

// ---------- tests ----------

describe('fetchImage: happy path', () => {
  it('fetches a PNG and a JPEG with matching SHA-256, final URL and declared type', async (t) => {
    const s = await serve(t, (req, res) => {
      if (req.url === '/a.png') pngHandler(req, res);
      else res.writeHead(200, { 'content-type': 'image/jpeg; charset=binary' }).end(JPEG);
    });
    const png = await fetchImage(`${s.origin}/a.png#frag`, PRIVATE_OK);
    assert.deepEqual(png.bytes, PNG);
    assert.equal(png.sha256, sha256(PNG));
    assert.equal(png.finalUrl, `${s.origin}/a.png`);
    assert.equal(png.contentType, 'image/png');

    const jpeg = await fetchImage(`${s.origin}/b.jpg`, PRIVATE_OK);
    assert.equal(jpeg.bytes.length, JPEG.length);
    assert.equal(jpeg.sha256, sha256(JPEG));
    assert.equal(jpeg.contentType, 'image/jpeg');
  });

  it('asks for identity encoding and sends its user agent', async (t) => {
    let seen: http.IncomingHttpHeaders = {};
    const s = await serve(t, (req, res) => {
      seen = req.headers;
      pngHandler(req, res);
    });
    await fetchImage(`${s.origin}/`, { ...PRIVATE_OK, userAgent: 'pixvote-test' });
    assert.equal(seen['accept-encoding'], 'identity');
    assert.equal(seen['user-agent'], 'pixvote-test');
  });

  it('a body of exactly maxBytes is accepted', async (t) => {
    const body = Buffer.concat([PNG, Buffer.alloc(1000 - PNG.length)]);
    const s = await serve(t, (_req, res) => res.writeHead(200).end(body));
    const got = await fetchImage(`${s.origin}/`, { ...PRIVATE_OK, maxBytes: 1000 });
    assert.equal(got.bytes.length, 1000);
  });
});

describe('fetchImage: URL rules', () => {
  const schemes = [
    'ftp://127.0.0.1/a.png',
    'file:///etc/passwd',
    `data:image/png;base64,${PNG.toString('base64')}`,
    'javascript:alert(1)',
    'gopher://127.0.0.1:70/',
  ];
  for (const url of schemes) {
    it(`refuses ${url.slice(0, 30)}`, async () => {
      await rejectsWith(fetchImage(url, PRIVATE_OK), 'image_url must be http or https');
    });
  }

  it('refuses user info without connecting', async (t) => {
    const tr = await trap(t);
    for (const url of [
      `http://user:pass@127.0.0.1:${tr.port}/`,
      `http://user@127.0.0.1:${tr.port}/`,
      `http://:pw@127.0.0.1:${tr.port}/`,
    ]) {
      await rejectsWith(fetchImage(url, PRIVATE_OK), 'image_url must not contain a user name or password');
    }
    assert.equal(tr.connections, 0);
  });

  it('refuses what is not a URL and over-long URLs', async () => {
    await rejectsWith(fetchImage('not a url', PRIVATE_OK), 'image_url is not a valid URL');
    await rejectsWith(
      fetchImage(`http://example.com/${'a'.repeat(2100)}`, PRIVATE_OK),
      'image_url is longer than 2048 characters',
    );
  });
});

describe('fetchImage: forbidden addresses never get a connection', () => {
  // Every notation the WHATWG URL parser turns into loopback/unspecified, plus IPv6 forms embedding them.
  const forms: ReadonlyArray<[string, RegExp]> = [
    ['127.0.0.1', /resolves to 127\.0\.0\.1, a loopback address$/],
    ['127.1', /resolves to 127\.0\.0\.1, a loopback address$/],
    ['2130706433', /resolves to 127\.0\.0\.1, a loopback address$/],
    ['0x7f000001', /resolves to 127\.0\.0\.1, a loopback address$/],
    ['0x7f.1', /resolves to 127\.0\.0\.1, a loopback address$/],
    ['017700000001', /resolves to 127\.0\.0\.1, a loopback address$/],
    ['0.0.0.0', /resolves to 0\.0\.0\.0, an unspecified address$/],
    ['0', /resolves to 0\.0\.0\.0, an unspecified address$/],
    ['[::1]', /resolves to ::1, a loopback address$/],
    ['[::]', /resolves to ::, an unspecified address$/],
    ['[::ffff:127.0.0.1]', /resolves to ::ffff:7f00:1, an IPv4-mapped loopback address$/],
    ['[::127.0.0.1]', /resolves to ::7f00:1, an IPv4-compatible address$/],
    ['[64:ff9b::7f00:1]', /resolves to 64:ff9b::7f00:1, a NAT64 loopback address$/],
    ['[2002:7f00:1::]', /resolves to 2002:7f00:1::, a 6to4 loopback address$/],
    ['169.254.169.254', /resolves to 169\.254\.169\.254, a link-local address$/],
    ['10.0.0.1', /resolves to 10\.0\.0\.1, a private address$/],
    ['[fd00::1]', /resolves to fd00::1, a unique-local address$/],
    ['localhost', /^image_url host does not resolve to a public address$/],
  ];

  it('with allowPrivate=false, each form is refused and the listener sees no connection at all', async (t) => {
    const tr = await trap(t);
    for (const [host, message] of forms) {
      await rejectsWith(fetchImage(`http://${host}:${tr.port}/x.png`, STRICT), message);
      await rejectsWith(fetchImage(`https://${host}:${tr.port}/x.png`, STRICT), message);
    }
    assert.equal(tr.connections, 0);
    assert.equal(tr.bytes, 0);
  });

  it('control: with allowPrivate=true the loopback forms do reach that listener', async (t) => {
    const tr = await trap(t);
    const reachable = [
      '127.1',
      '2130706433',
      '0x7f000001',
      '017700000001',
      '0.0.0.0',
      '[::1]',
      '[::ffff:127.0.0.1]',
      'localhost',
    ];
    for (const host of reachable) {
      const got = await fetchImage(`http://${host}:${tr.port}/x.png`, PRIVATE_OK);
      assert.equal(got.sha256, sha256(PNG));
    }
    assert.equal(tr.connections, reachable.length);
  });

  it('a public-looking host name that resolves to loopback is refused before dialling', async (t) => {
    const tr = await trap(t);
    const resolve = async () => [{ address: '127.0.0.1' }];
    await rejectsWith(
      fetchImage(`http://images.public.example:${tr.port}/`, { ...STRICT, resolve }),
      'image_url host does not resolve to a public address',
    );
    assert.equal(tr.connections, 0);
  });

  it('a host name resolving to a private address does not reveal that address', async () => {
    const resolve = async () => [{ address: '10.0.3.17' }];
    await rejectsWith(
      fetchImage('http://db.internal.example/', { ...STRICT, resolve }),
      'image_url host does not resolve to a public address',
    );
  });

  it(
    'fetch_failed never tells what a host name resolved to: not the address, not its kind, ' +
      'not whether it resolved',
    async () => {
      const answers: Record<string, string[]> = {
        'loopback.example': ['127.0.0.1'],
        'v6.example': ['::1'],
        'mapped.example': ['::ffff:10.1.2.3'],
        'private.example': ['10.0.3.17', '192.168.1.9'],
        'nxdomain.example': [],
      };
      const resolve = async (name: string) => (answers[name] ?? []).map((address) => ({ address }));
      const messages = new Set<string>();
      // `localhost` goes through the system resolver.
      for (const host of [...Object.keys(answers), 'localhost']) {
        const err = await fetchImage(
          `http://${host}/x.png`,
          host === 'localhost' ? STRICT : { ...STRICT, resolve },
        ).then(
          () => assert.fail(`${host} was fetched`),
          (e: AppError) => e,
        );
        assert.equal(err.code, 'fetch_failed', host);
        assert.doesNotMatch(err.message, /127\.0\.0\.1|::1|10\.|192\.168|ffff/, host);
        assert.doesNotMatch(err.message, /loopback|private|mapped|link-local|unique-local|could not be resolved/, host);
        messages.add(err.message);
      }
      assert.deepEqual([...messages], ['image_url host does not resolve to a public address']);
    },
  );

  it('of several resolved addresses only allowed ones are dialled', async (t) => {
    const tr = await trap(t, '127.0.0.1');
    const s = await serve(t, pngHandler, '127.0.0.2', tr.port);
    const resolve = async () => [{ address: '127.0.0.1' }, { address: '127.0.0.2' }];
    const got = await fetchImage(`http://cdn.public.example:${tr.port}/`, {
      ...STRICT,
      resolve,
      addressPolicy: pretendPublic('127.0.0.2'),
    });
    assert.equal(got.sha256, sha256(PNG));
    assert.equal(s.requests, 1);
    assert.equal(tr.connections, 0);
  });

  it('a peer found forbidden after the TCP handshake is dropped before a single byte is written', async (t) => {
    const tr = await trap(t);
    // Simulates the dialled address and the connected peer disagreeing: the first check passes, the one on
    // socket.remoteAddress does not.
    let checks = 0;
    const addressPolicy = (ip: string) => (checks++ === 0 ? null : isForbiddenAddress(ip));
    await rejectsWith(
      fetchImage(`http://127.0.0.1:${tr.port}/`, { ...STRICT, addressPolicy }),
      'image_url resolves to 127.0.0.1, a loopback address',
    );
    await tr.settled();
    assert.equal(tr.connections, 1);
    assert.equal(tr.bytes, 0);
    assert.equal(checks, 2);
  });

  it('a non-default port is fine when the connected address is public', async (t) => {
    const s = await serve(t, pngHandler, '127.0.0.2');
    assert.notEqual(s.port, 80);
    const got = await fetchImage(`${s.origin}/`, { ...STRICT, addressPolicy: pretendPublic('127.0.0.2') });
    assert.equal(got.sha256, sha256(PNG));
  });
});

describe('fetchImage: redirects', () => {
  const chain = (t: TestContext) =>
    serve(t, (req, res) => {
      const n = Number(req.url?.split('/')[2] ?? 0);
      if (n > 0) res.writeHead(302, { location: `/r/${n - 1}` }).end();
      else pngHandler(req, res);
    });

  it('follows 1 and 3 redirects and reports the final URL', async (t) => {
    const s = await chain(t);
    assert.equal((await fetchImage(`${s.origin}/r/1`, PRIVATE_OK)).finalUrl, `${s.origin}/r/0`);
    assert.equal((await fetchImage(`${s.origin}/r/3`, PRIVATE_OK)).finalUrl, `${s.origin}/r/0`);
  });

  it('refuses a fourth redirect, and honours a lower maxRedirects', async (t) => {
    const s = await chain(t);
    await rejectsWith(fetchImage(`${s.origin}/r/4`, PRIVATE_OK), 'image_url redirected more than 3 times');
    await rejectsWith(
      fetchImage(`${s.origin}/r/1`, { ...PRIVATE_OK, maxRedirects: 0 }),
      'image_url redirected more than 0 times',
    );
  });

  it('re-validates scheme, user info and Location of each target', async (t) => {
    const s = await serve(t, (req, res) => {
      const to: Record<string, string> = {
        '/ftp': 'ftp://127.0.0.1/x',
        '/file': 'file:///etc/passwd',
        '/user': 'http://a:b@127.0.0.1/',
      };
      const location = to[req.url ?? ''];
      res.writeHead(302, location === undefined ? {} : { location }).end();
    });
    await rejectsWith(fetchImage(`${s.origin}/ftp`, PRIVATE_OK), 'image_url redirect target must be http or https');
    await rejectsWith(fetchImage(`${s.origin}/file`, PRIVATE_OK), 'image_url redirect target must be http or https');
    await rejectsWith(
      fetchImage(`${s.origin}/user`, PRIVATE_OK),
      'image_url redirect target must not contain a user name or password',
    );
    await rejectsWith(fetchImage(`${s.origin}/none`, PRIVATE_OK), 'image_url answered HTTP 302 without a Location');
  });

  it('a redirect from a public host to a loopback literal is refused at connect', async (t) => {
    const tr = await trap(t, '127.0.0.1');
    const s = await serve(
      t,
      (_req, res) => res.writeHead(301, { location: `http://127.0.0.1:${tr.port}/` }).end(),
      '127.0.0.2',
    );
    await rejectsWith(
      fetchImage(`${s.origin}/`, { ...STRICT, addressPolicy: pretendPublic('127.0.0.2') }),
      'image_url resolves to 127.0.0.1, a loopback address',
    );
    assert.equal(s.requests, 1);
    assert.equal(tr.connections, 0);
  });

  it('a redirect to a host name that resolves to loopback is refused at connect', async (t) => {
    const tr = await trap(t, '127.0.0.1');
    const s = await serve(
      t,
      (_req, res) => res.writeHead(307, { location: `http://internal.evil.example:${tr.port}/` }).end(),
      '127.0.0.2',
    );
    const hosts: Record<string, string> = { 'cdn.public.example': '127.0.0.2', 'internal.evil.example': '127.0.0.1' };
    const resolve = async (name: string) => [{ address: hosts[name] ?? '192.0.2.1' }];
    await rejectsWith(
      fetchImage(`http://cdn.public.example:${s.port}/`, {
        ...STRICT,
        resolve,
        addressPolicy: pretendPublic('127.0.0.2'),
      }),
      'image_url host does not resolve to a public address',
    );
    assert.equal(s.requests, 1);
    assert.equal(tr.connections, 0);
  });

  it('DNS rebinding: the same host re-resolving to loopback for the next connection is refused', async (t) => {
    const tr = await trap(t, '127.0.0.1');
    // Same port on the "public" address, so the second hop differs only in what DNS answers.
    const s = await serve(
      t,
      (_req, res) => res.writeHead(302, { location: '/next', connection: 'close' }).end(),
      '127.0.0.2',
      tr.port,
    );
    const answers = ['127.0.0.2', '127.0.0.1'];
    let lookups = 0;
    const resolve = async () => [{ address: answers[Math.min(lookups++, 1)] as string }];
    await rejectsWith(
      fetchImage(`http://rebind.example:${tr.port}/`, {
        ...STRICT,
        resolve,
        addressPolicy: pretendPublic('127.0.0.2'),
      }),
      'image_url host does not resolve to a public address',
    );
    assert.equal(lookups, 2);
    assert.equal(s.requests, 1);
    assert.equal(tr.connections, 0);
  });
});

describe('fetchImage: time limit', () => {
  it('a slow drip after the first bytes is cut off by timeoutMs', async (t) => {
    const s = await serve(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.write(PNG.subarray(0, 16));
      const drip = setInterval(() => res.write('x'), 50);
      res.on('close', () => clearInterval(drip));
    });
    await rejectsWith(
      fetchImage(`${s.origin}/`, { ...PRIVATE_OK, timeoutMs: 400 }),
      'image_url took longer than 400 ms',
    );
  });

  it('a server that never answers is cut off by timeoutMs', async (t) => {
    const s = await serve(t, () => {});
    await rejectsWith(
      fetchImage(`${s.origin}/`, { ...PRIVATE_OK, timeoutMs: 300 }),
      'image_url took longer than 300 ms',
    );
  });

  it('a DNS lookup that never returns is cut off by timeoutMs', async () => {
    const resolve = () => new Promise<never>(() => {});
    await rejectsWith(
      fetchImage('http://slow-dns.example/', { ...STRICT, resolve, timeoutMs: 300 }),
      'image_url took longer than 300 ms',
    );
  });

  it("the caller's signal cancels the fetch", async (t) => {
    const ac = new AbortController();
    const s = await serve(t, () => ac.abort());
    await rejectsWith(
      fetchImage(`${s.origin}/`, { ...PRIVATE_OK, signal: ac.signal }),
      'image_url fetch was cancelled',
    );
  });
});

describe('fetchImage: body rules', () => {
  it('an endless body stops at maxBytes', async (t) => {
    const s = await serve(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      endless(res, PNG);
    });
    await rejectsWith(
      fetchImage(`${s.origin}/`, { ...PRIVATE_OK, maxBytes: 65536 }),
      'image_url body exceeds 65536 bytes',
    );
  });

  it('a Content-Length above maxBytes fails before the body is read', async (t) => {
    const s = await serve(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(10 << 20) });
      res.write(PNG); // then stalls: only an early stop avoids the timeout
    });
    await rejectsWith(
      fetchImage(`${s.origin}/`, { ...PRIVATE_OK, timeoutMs: 10_000 }),
      'image_url body exceeds 1048576 bytes',
    );
  });

  it('HTML is refused from its first bytes, without reading the rest', async (t) => {
    const s = await serve(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      endless(res, Buffer.from('<!doctype html><html><body>'));
    });
    await rejectsWith(
      fetchImage(`${s.origin}/`, { ...PRIVATE_OK, maxBytes: 10 << 20 }),
      'image_url is not an image (text/html)',
    );
  });

  it('the bytes decide, not the declared type; remote header text is not echoed', async (t) => {
    const s = await serve(t, (req, res) => {
      const type = req.url === '/liar' ? 'image/png' : 'x<script>';
      res.writeHead(200, { 'content-type': type }).end('GIF87 is not enough');
    });
    await rejectsWith(fetchImage(`${s.origin}/liar`, PRIVATE_OK), 'image_url is not an image (image/png)');
    await rejectsWith(fetchImage(`${s.origin}/odd`, PRIVATE_OK), 'image_url is not an image (no content type)');
  });

  it('an empty body and a non-200 status fail', async (t) => {
    const s = await serve(t, (req, res) => res.writeHead(req.url === '/gone' ? 404 : 200).end());
    await rejectsWith(fetchImage(`${s.origin}/gone`, PRIVATE_OK), 'image_url answered HTTP 404');
    await rejectsWith(fetchImage(`${s.origin}/empty`, PRIVATE_OK), 'image_url is not an image (no content type)');
  });
});

describe('fetchImage: compressed bodies', () => {
  // 32 MiB of zeros behind a PNG signature compresses to a few tens of KiB.
  const inflated = Buffer.concat([PNG.subarray(0, 16), Buffer.alloc(32 << 20)]);
  let gzipBomb: Buffer;
  let brBomb: Buffer;
  before(() => {
    gzipBomb = zlib.gzipSync(inflated, { level: 9 });
    brBomb = zlib.brotliCompressSync(inflated, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } });
  });

  for (const [encoding, bomb] of [
    ['gzip', () => gzipBomb],
    ['br', () => brBomb],
  ] as const) {
    it(`a ${encoding} bomb stops at maxBytes of inflated data`, async (t) => {
      const s = await serve(t, (_req, res) => {
        res
          .writeHead(200, {
            'content-type': 'image/png',
            'content-encoding': encoding,
            'content-length': bomb().length,
          })
          .end(bomb());
      });
      assert.ok(bomb().length < 1 << 20, 'the compressed body itself is under the cap');
      await rejectsWith(fetchImage(`${s.origin}/`, PRIVATE_OK), 'image_url body exceeds 1048576 bytes');
    });
  }

  it('a small gzip/deflate image is inflated and hashed as the image bytes', async (t) => {
    const s = await serve(t, (req, res) => {
      const deflate = req.url === '/deflate';
      res
        .writeHead(200, { 'content-encoding': deflate ? 'deflate' : 'gzip' })
        .end(deflate ? zlib.deflateSync(JPEG) : zlib.gzipSync(JPEG));
    });
    for (const path of ['/gzip', '/deflate']) {
      const got = await fetchImage(`${s.origin}${path}`, PRIVATE_OK);
      assert.equal(got.sha256, sha256(JPEG));
    }
  });

  it('unknown or corrupt encodings are refused', async (t) => {
    const s = await serve(t, (req, res) => {
      if (req.url === '/zstd') res.writeHead(200, { 'content-encoding': 'zstd' }).end(PNG);
      else res.writeHead(200, { 'content-encoding': 'gzip' }).end(PNG);
    });
    await rejectsWith(fetchImage(`${s.origin}/zstd`, PRIVATE_OK), 'image_url uses an unsupported content encoding');
    await rejectsWith(fetchImage(`${s.origin}/corrupt`, PRIVATE_OK), 'image_url body could not be decoded (gzip)');
  });
});

describe('fetchImage: https', () => {
  let cert: { key: Buffer; cert: Buffer } | null = null;
  before(() => {
    const dir = mkdtempSync(join(tmpdir(), 'safe-fetch-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
        ],
        { stdio: 'ignore' },
      );
      cert = { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
    } catch {
      cert = null;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('verifies certificates: a self-signed one fails the handshake, without leaking details', async (t) => {
    if (cert === null) return t.skip('openssl is not available');
    const server = https.createServer(cert, pngHandler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as net.AddressInfo).port;
    await rejectsWith(fetchImage(`https://127.0.0.1:${port}/`, PRIVATE_OK), 'image_url TLS handshake failed');
  });
});

/**
 * Property-based (fast-check): the loopback listener written every way the URL parser reads as an address — each
 * part of an IPv4 address in decimal, hex or octal, two or three parts, the whole as one number, trailing dots,
 * percent-encoded or full-width characters, IPv6 with or without `::`, zero padding, IPv4-mapped — reached directly
 * or through a redirect whose Location is absolute, scheme-relative, written with backslashes or one slash, and
 * every host name resolving to loopback. With the address rule on, nothing reaches the listener; with it lifted
 * (the control), each form the URL parser puts on the listener does reach it, so the forms are not noise.
 */
describe('fetchImage: forbidden addresses in forms fast-check writes', () => {
  /**
   * An IPv4 address the listener on `::` answers (loopback or unspecified), in one of its notations: not 127.0.0.0
   * nor 127.255.255.255, the network's own and broadcast addresses, which no connection reaches, nor 127.0.0.2,
   * which plays the public server here.
   */
  const v4Form = fc
    .oneof(
      fc.constant(0x7f000001),
      fc.integer({ min: 0x7f000001, max: 0x7ffffffe }).filter((a) => a !== 0x7f000002),
      fc.constant(0),
    )
    .chain(v4Written)
    .chain(disguised);
  /** IPv6 forms of loopback and of IPv4-mapped loopback. */
  const v6Form = fc
    .record({
      mapped: fc.boolean(),
      low: fc.integer({ min: 1, max: 0xfffffe }),
      pad: fc.boolean(),
      compress: fc.boolean(),
      upper: fc.boolean(),
      dotted: fc.boolean(),
    })
    .map(({ mapped, low, pad, compress, upper, dotted }) => {
      const groups = mapped ? [0, 0, 0, 0, 0, 0xffff, 0x7f00 | (low >>> 16), low & 0xffff] : [0, 0, 0, 0, 0, 0, 0, 1];
      const hex = (g: number) => (pad ? g.toString(16).padStart(4, '0') : g.toString(16));
      let text = groups.map(hex).join(':');
      if (mapped && dotted)
        text = `${groups.slice(0, 6).map(hex).join(':')}:127.${low >>> 16}.${(low >>> 8) & 255}.${low & 255}`;
      if (compress) text = text.replace(/^(0{1,4}:)+/, '::');
      return `[${upper ? text.toUpperCase() : text}]`;
    });
  const hostForm = fc.oneof(
    v4Form,
    v6Form,
    fc.constantFrom('localhost', 'LOCALHOST.', 'internal.example', 'metadata.google.internal', 'x'),
  );
  /** How a Location (or a URL) may lead to the host: each prefix the URL parser reads as a new authority. */
  const lead = fc.constantFrom(
    'http://',
    'HTTP://',
    'http:\\\\',
    'http:/',
    'http:\\/',
    '//',
    '\\\\',
    '/\\',
    ' http://',
  );
  const tail = fc.constantFrom('/', '/x.png', '/..//x.png', '', '?a=1', '#f', '/%2e%2e/x', '\\x.png');
  const portForm = (port: number) => fc.constantFrom(`:${port}`, `:00${port}`);

  const internalDns = async () => [{ address: '127.0.0.1' }];
  /** Where the URL parser sends `location` from `base`, or null when it is no URL. */
  const landsOn = (location: string, base: string) => {
    try {
      const url = new URL(location, base);
      return url.protocol === 'http:' ? url : null;
    } catch {
      return null;
    }
  };
  const REACHES = /^(127\.\d+\.\d+\.\d+|0\.0\.0\.0|\[::1\]|\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\])$/;

  it('a redirect to any of them is refused without a connection; with the rule lifted, it arrives', async (t) => {
    const tr = await trap(t);
    let location = '';
    const s = await serve(t, (_req, res) => res.writeHead(302, { location }).end(), '127.0.0.2');
    let reachedInControl = 0;
    await fc.assert(
      fc.asyncProperty(fc.tuple(lead, hostForm, portForm(tr.port), tail), async (pieces) => {
        // A header carries bytes, not characters: full-width ones go as their percent-encoded UTF-8, which the
        // URL parser decodes in a host before mapping it to ASCII.
        location = pieces.join('').replace(/[\u0100-\u{10ffff}]/gu, (c) => encodeURIComponent(c));
        const before = tr.connections;
        await assert.rejects(
          fetchImage(`${s.origin}/`, {
            ...STRICT,
            resolve: internalDns,
            addressPolicy: pretendPublic('127.0.0.2'),
          }),
          (err: unknown) => err instanceof AppError && err.code === 'fetch_failed',
          location,
        );
        assert.equal(tr.connections, before, `${JSON.stringify(location)} reached the listener`);
        // The control: where the URL parser puts this Location on the listener, the same fetch without the rule
        // arrives there.
        const target = landsOn(location, `${s.origin}/`);
        if (target === null || Number(target.port) !== tr.port || !REACHES.test(target.hostname)) return;
        const got = await fetchImage(`${s.origin}/`, { ...PRIVATE_OK, resolve: internalDns });
        assert.equal(got.sha256, sha256(PNG), location);
        assert.equal(tr.connections, before + 1, location);
        reachedInControl++;
      }),
      { numRuns: 300 },
    );
    // Most forms are real addresses of the listener (the rest: names, and what the parser refuses).
    assert.ok(reachedInControl > 100, `${reachedInControl} of 300 forms reached the listener in the control`);
  });

  it('fetched directly, each is refused without a connection', async (t) => {
    const tr = await trap(t);
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(
          fc.constantFrom('http://', 'https://', 'HTTP://', 'http:\\\\', 'http:/'),
          hostForm,
          portForm(tr.port),
          tail,
        ),
        async (pieces) => {
          const url = pieces.join('');
          await assert.rejects(
            fetchImage(url, { ...STRICT, resolve: internalDns }),
            (err: unknown) => err instanceof AppError && err.code === 'fetch_failed',
            url,
          );
        },
      ),
      { numRuns: 300 },
    );
    assert.equal(tr.connections, 0);
  });
});
