/**
 * `POST /api/upload` with multipart bodies in the shapes clients and attackers really send, generated: the boundary
 * quoted, mismatched, missing or too long; LF for CRLF; no closing delimiter, or junk before and after; part headers
 * without Content-Disposition, with unquoted or RFC 5987 (`filename*=`) names, path or NUL file names, header lines
 * without a colon or 20 KB long, a nested multipart part, prototype-ish field names (`__proto__`, `constructor`),
 * the file part twice or cut short, thousands of fields. The oracle is the quality bar and API.md's error table, not
 * the parser: every answer is 201, 200 (a duplicate) or a 4xx in the contract's body naming what failed, never a
 * 5xx nor a stack; every 201 is an upload that lists, and nothing else is left: no row, no temp file.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { Client } from 'undici';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { countUploads } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { until } from '../support/budget.ts';
import { openRaw } from '../support/raw-http.ts';

let app: TestApp;
let user: TestUser;
let jpegs: Buffer[];

before(async () => {
  app = await startApp();
  user = await registerUser(app.api);
  jpegs = await Promise.all([1, 2, 3, 4].map((seed) => photoJpeg({ width: 48, height: 32, seed: 7100 + seed })));
});
after(() => app.close());

interface Part {
  headers: string[];
  body: Buffer;
}

const disposition = (name: string, filename?: string) =>
  `Content-Disposition: form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}`;

/** One way to bend a well-formed request (its boundary, its parts, its bytes). */
type Bend =
  | 'quoted-boundary'
  | 'mismatched-boundary'
  | 'no-boundary'
  | 'long-boundary'
  | 'lf-only'
  | 'no-closing'
  | 'preamble-epilogue'
  | 'no-disposition'
  | 'unquoted-name'
  | 'rfc5987-filename'
  | 'path-filename'
  | 'nul-filename'
  | 'colonless-header'
  | 'long-header'
  | 'nested-multipart'
  | 'proto-fields'
  | 'file-twice'
  | 'file-cut'
  | 'many-fields'
  | 'no-file'
  | 'text-file-type';

const BENDS: Bend[] = [
  'quoted-boundary',
  'mismatched-boundary',
  'no-boundary',
  'long-boundary',
  'lf-only',
  'no-closing',
  'preamble-epilogue',
  'no-disposition',
  'unquoted-name',
  'rfc5987-filename',
  'path-filename',
  'nul-filename',
  'colonless-header',
  'long-header',
  'nested-multipart',
  'proto-fields',
  'file-twice',
  'file-cut',
  'many-fields',
  'no-file',
  'text-file-type',
];

function request(bends: Set<Bend>, jpeg: Buffer, description: string): { body: Buffer; contentType: string } {
  const boundary = bends.has('long-boundary') ? 'b'.repeat(200) : `----pixvote${Math.random().toString(16).slice(2)}`;
  const filePart = (filename: string): Part => ({
    headers: [
      bends.has('rfc5987-filename')
        ? `Content-Disposition: form-data; name="file"; filename*=UTF-8''%E2%9C%93%20cat.jpg`
        : disposition('file', filename),
      `Content-Type: ${bends.has('text-file-type') ? 'text/plain' : 'image/jpeg'}`,
    ],
    body: bends.has('file-cut') ? jpeg.subarray(0, jpeg.length >> 1) : jpeg,
  });
  const name = bends.has('path-filename') ? '../../etc/passwd.jpg' : bends.has('nul-filename') ? 'a\0b.jpg' : 'a.jpg';
  const parts: Part[] = [
    { headers: [disposition('upload_type')], body: Buffer.from('image') },
    { headers: [disposition('description')], body: Buffer.from(description) },
  ];
  if (!bends.has('no-file')) parts.push(filePart(name));
  if (bends.has('file-twice')) parts.push(filePart('b.jpg'));
  if (bends.has('no-disposition')) parts.push({ headers: ['Content-Type: text/plain'], body: Buffer.from('orphan') });
  if (bends.has('unquoted-name'))
    parts.push({ headers: ['Content-Disposition: form-data; name=tags'], body: Buffer.from('x') });
  if (bends.has('colonless-header'))
    parts.push({ headers: [disposition('tags'), 'this line has no colon'], body: Buffer.from('y') });
  if (bends.has('long-header'))
    parts.push({ headers: [disposition('tags'), `X-Pad: ${'p'.repeat(20_000)}`], body: Buffer.from('z') });
  if (bends.has('nested-multipart'))
    parts.push({
      headers: [disposition('tags'), 'Content-Type: multipart/mixed; boundary=inner'],
      body: Buffer.from('--inner\r\nContent-Type: text/plain\r\n\r\nhi\r\n--inner--'),
    });
  if (bends.has('proto-fields'))
    for (const field of ['__proto__', 'constructor', 'prototype', 'hasOwnProperty'])
      parts.push({ headers: [disposition(field)], body: Buffer.from('{"polluted":true}') });
  if (bends.has('many-fields'))
    for (let i = 0; i < 3000; i++) parts.push({ headers: [disposition(`f${i}`)], body: Buffer.from('1') });

  const eol = bends.has('lf-only') ? '\n' : '\r\n';
  const chunks: Buffer[] = [];
  if (bends.has('preamble-epilogue')) chunks.push(Buffer.from(`this is the preamble${eol}`));
  for (const p of parts) {
    chunks.push(Buffer.from(`--${boundary}${eol}${p.headers.join(eol)}${eol}${eol}`), p.body, Buffer.from(eol));
  }
  if (!bends.has('no-closing')) chunks.push(Buffer.from(`--${boundary}--${eol}`));
  if (bends.has('preamble-epilogue')) chunks.push(Buffer.from('and an epilogue'));
  const declared = bends.has('mismatched-boundary') ? `${boundary}x` : boundary;
  const contentType = bends.has('no-boundary')
    ? 'multipart/form-data'
    : bends.has('quoted-boundary')
      ? `multipart/form-data; boundary="${declared}"`
      : `multipart/form-data; boundary=${declared}`;
  return { body: Buffer.concat(chunks), contentType };
}

const CONTRACT_4XX = new Set(['invalid_request', 'invalid_image', 'unsupported_format', 'payload_too_large']);

/** Entries under DATA_DIR/tmp but the instance heartbeats. */
const tmpEntries = async (): Promise<string[]> =>
  (await readdir(join(app.config.dataDir, 'tmp'), { recursive: true }).catch(() => [] as string[])).filter(
    (e) => !e.endsWith('.alive') && e.includes('/'),
  );

test("every multipart shape: 201, a duplicate's 200 or a contract 4xx, never a 5xx; nothing else left", async () => {
  const before = await countUploads(app);
  const connection = new Client(app.url, { pipelining: 1 });
  after(() => connection.close());
  const outcomes = new Map<string, number>();
  let created = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.uniqueArray(fc.constantFrom(...BENDS), { minLength: 0, maxLength: 3 }),
      fc.integer({ min: 0, max: jpegs.length - 1 }),
      fc.string({ maxLength: 20 }),
      async (bends, which, description) => {
        const { body, contentType } = request(new Set(bends), jpegs[which]!, description);
        // One connection for every request, as a client with keep-alive uses it: a request that leaves it unusable
        // (its body half read, so the server waits on it) fails the next one.
        const res = await connection.request({
          method: 'POST',
          path: '/api/upload',
          headers: { authorization: `Bearer ${user.token}`, 'content-type': contentType },
          body,
        });
        const text = await res.body.text();
        const what = `${bends.join(', ') || 'well-formed'}: ${res.statusCode} ${text.slice(0, 300)}`;
        assert.ok(res.statusCode < 500, what);
        const json = JSON.parse(text) as {
          error?: string;
          message?: string;
          id?: string;
          duplicate?: boolean;
          existingUploadId?: string;
        };
        outcomes.set(`${res.statusCode}`, (outcomes.get(`${res.statusCode}`) ?? 0) + 1);
        if (res.statusCode === 201) {
          created++;
          assert.equal(typeof json.id, 'string', what);
          return;
        }
        if (res.statusCode === 200) {
          // A duplicate of an earlier one (API.md: 200, nothing new stored).
          assert.equal(json.duplicate, true, what);
          assert.equal(typeof json.existingUploadId, 'string', what);
          return;
        }
        assert.deepEqual(Object.keys(json).sort(), ['error', 'message'], what);
        assert.ok(!/\n\s+at /.test(json.message!), `${what}: a stack`);
        assert.ok(CONTRACT_4XX.has(json.error!), what);
      },
    ),
    { numRuns: 80 },
  );
  assert.equal(await countUploads(app), before + created, 'a row for each 201 and none other');
  await until(async () => (await tmpEntries()).length === 0, 100);
  assert.deepEqual(await tmpEntries(), [], 'no temp file');
  // Both kinds of outcome are reached (measured: ~38 of 80 taken, as new or as duplicates of the four images, ~42
  // refused), so a generator that broke every request, or none, fails here; the bars sit far under both.
  const taken = (outcomes.get('201') ?? 0) + (outcomes.get('200') ?? 0);
  assert.ok(taken >= 15 && 80 - taken >= 15, `${taken} of 80 taken: ${JSON.stringify([...outcomes])}`);
});

test('a body the parser stops reading (too many fields, a second file): the connection usable or closed', async () => {
  // formidable stops at the 21st field or the second file; the rest of the body was left unread on a keep-alive
  // connection, where the server then waited on it: a client's next request there met a reset after a timeout.
  for (const bends of [['many-fields'], ['file-twice', 'many-fields'], ['long-header', 'many-fields']] as Bend[][]) {
    const { body, contentType } = request(new Set(bends), jpegs[0]!, '');
    const c = await openRaw(app.url);
    let received = '';
    c.socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    c.write(
      `POST /api/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.token}\r\n` +
        `Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    c.write(body);
    const r = await c.reply();
    assert.equal(r.status, 400, `${bends.join(', ')}: ${r.text}`);
    if (r.headers.connection === 'close') {
      await c.closed();
      continue;
    }
    // Kept alive: then the next request on it is answered.
    c.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => received.split('HTTP/1.1 ').length > 2 || c.isClosed(), 20);
    assert.match(received.split('HTTP/1.1 ')[2] ?? 'nothing', /^200 /, `${bends.join(', ')}: the next request`);
    c.socket.destroy();
  }
});
