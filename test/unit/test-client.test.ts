/**
 * The tests' HTTP client (support/http.ts) sends requests through undici's `request` instead of `fetch`, for its CPU.
 * What the server sees and what a test reads must stay what `fetch` gives: the same request headers and body, the
 * same status, headers and decoded body. Checked here side by side against `fetch` on a bare node:http server.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { client } from '../support/http.ts';

let server: Server;
let base: string;
let seen: Array<{ method: string; headers: IncomingHttpHeaders; body: string }> = [];

before(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const payload = Buffer.from(JSON.stringify({ ok: true, path: req.url }));
      const coding = /\/(gzip|deflate|br)$/.exec(req.url ?? '')?.[1];
      const encode = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };
      res.setHeader('content-type', 'application/json');
      res.setHeader('x-twice', ['a', 'b']);
      if (req.url === '/moved') {
        res.writeHead(302, { location: '/elsewhere' });
        res.end();
        return;
      }
      if (coding) res.setHeader('content-encoding', coding);
      res.end(coding ? encode[coding as keyof typeof encode](payload) : payload);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise((r) => server.close(r)));

/** What differs between two connections and is not the client's doing. */
const comparable = (h: IncomingHttpHeaders) => {
  const { host: _host, connection: _connection, ...rest } = h;
  return rest;
};

const cases: Array<{ name: string; method: string; path: string; json?: unknown; raw?: string | Buffer }> = [
  { name: 'a GET', method: 'GET', path: '/plain' },
  { name: 'a JSON POST', method: 'POST', path: '/json', json: { a: 1, b: 'ü' } },
  { name: 'a string body (text/plain, as fetch sends it)', method: 'PATCH', path: '/text', raw: 'hello ü' },
  { name: 'a bytes body', method: 'PUT', path: '/bytes', raw: Buffer.from([0, 1, 2, 255]) },
  { name: 'a DELETE', method: 'DELETE', path: '/gone' },
  { name: 'a gzip answer', method: 'GET', path: '/gzip' },
  { name: 'a deflate answer', method: 'GET', path: '/deflate' },
  { name: 'a brotli answer', method: 'GET', path: '/br' },
  { name: 'a redirect, not followed', method: 'GET', path: '/moved' },
];

for (const c of cases)
  test(`the test client sends and reads what fetch does: ${c.name}`, async () => {
    const headers = { authorization: 'Bearer t', 'x-custom': 'v' };
    seen = [];
    const ours = await client(base).request(c.method, c.path, c.json, {
      headers,
      ...(c.raw !== undefined ? { raw: c.raw } : {}),
      unchecked: 'a bare server, not the app',
    });
    const body = c.raw ?? (c.json !== undefined ? JSON.stringify(c.json) : undefined);
    const theirs = await fetch(base + c.path, {
      method: c.method,
      headers: { ...headers, ...(c.json !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body } : {}),
      redirect: 'manual',
    });
    const theirBytes = Buffer.from(await theirs.arrayBuffer());
    const [sentByUs, sentByFetch] = seen;
    assert.deepEqual(comparable(sentByUs!.headers), comparable(sentByFetch!.headers), 'the request headers');
    assert.equal(sentByUs!.body, sentByFetch!.body, 'the request body');
    assert.equal(ours.status, theirs.status);
    const replyHeaders = (h: Headers) =>
      [...h].filter(([k]) => k !== 'date' && k !== 'connection' && k !== 'keep-alive');
    assert.deepEqual(replyHeaders(ours.headers), replyHeaders(theirs.headers), 'the reply headers');
    assert.deepEqual(ours.bytes, theirBytes, 'the body, decoded as fetch decodes it');
  });
