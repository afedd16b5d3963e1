import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { ListedHeadersResponse, listHeader } from '../../src/gateway/listed-headers.ts';

type Handler = (req: IncomingMessage, res: ListedHeadersResponse) => void;

let handler: Handler = () => {};
let server: Server;
let port = 0;

/** One raw request on its own connection: the status line and header lines as the wire has them, and the body. */
function raw(method = 'GET'): Promise<{ status: number; lines: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', reject);
    socket.on('end', () => {
      const at = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = text.slice(0, at).split('\r\n');
      resolve({ status: Number(statusLine!.split(' ')[1]), lines, body: text.slice(at + 4) });
    });
    socket.write(`${method} / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  });
}

/** The header names as written, in order, without the ones Node adds itself. */
const names = (lines: string[]) =>
  lines.map((l) => l.slice(0, l.indexOf(':'))).filter((n) => !['Date', 'Connection', 'Keep-Alive'].includes(n));

describe('ListedHeadersResponse (the early headers as one list, listed-headers.ts)', () => {
  before(async () => {
    server = createServer({ ServerResponse: ListedHeadersResponse }, (req, res) =>
      handler(req, res as ListedHeadersResponse),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  test('sendListed writes the listed headers, then its own, once each, and the body', async () => {
    let sent: boolean | undefined;
    handler = (_req, res) => {
      res.list('X-Request-Id', 'r1');
      res.list('X-Frame-Options', 'DENY');
      sent = res.sendListed(200, ['ETag', '"e"', 'Content-Length', '5'], 'hello');
    };
    const r = await raw();
    assert.equal(sent, true);
    assert.equal(r.status, 200);
    assert.deepEqual(names(r.lines), ['X-Request-Id', 'X-Frame-Options', 'ETag', 'Content-Length']);
    assert.ok(r.lines.includes('X-Frame-Options: DENY'));
    assert.equal(r.body, 'hello');
    const head = await raw('HEAD');
    assert.ok(head.lines.includes('Content-Length: 5'));
    assert.equal(head.body, '');
  });

  test('any other use of the headers sets the listed ones first, in order; sendListed then declines', async () => {
    let seen: unknown[] = [];
    handler = (_req, res) => {
      res.list('X-Request-Id', 'r2');
      res.list('RateLimit-Remaining', '9');
      seen = [res.getHeader('x-request-id'), res.hasHeader('ratelimit-remaining'), res.getHeaderNames()];
      res.removeHeader('RateLimit-Remaining');
      res.list('X-Late', 'yes');
      res.setHeader('Content-Type', 'text/plain');
      seen.push(res.sendListed(200, ['ETag', '"e"'], 'no'));
      res.end('plain');
    };
    const r = await raw();
    assert.deepEqual(seen, ['r2', true, ['x-request-id', 'ratelimit-remaining'], false]);
    assert.deepEqual(names(r.lines), ['X-Request-Id', 'X-Late', 'Content-Type', 'Content-Length']);
    assert.equal(r.body, 'plain');
  });

  test('writeHead with an object merges with the listed headers (the object wins a name both have)', async () => {
    handler = (_req, res) => {
      res.list('X-Request-Id', 'r3');
      res.list('Cache-Control', 'no-store');
      res.writeHead(201, { 'Cache-Control': 'public', 'Content-Length': '0' });
      res.end();
    };
    const r = await raw();
    assert.equal(r.status, 201);
    assert.ok(r.lines.includes('X-Request-Id: r3'));
    assert.deepEqual(
      r.lines.filter((l) => l.toLowerCase().startsWith('cache-control')),
      ['Cache-Control: public'],
    );
  });

  test('end() without any other use of the headers still writes the listed ones', async () => {
    handler = (_req, res) => {
      res.list('X-Request-Id', 'r4');
      res.statusCode = 204;
      res.end();
    };
    const r = await raw();
    assert.equal(r.status, 204);
    assert.ok(r.lines.includes('X-Request-Id: r4'));
  });

  test('listHeader on a plain ServerResponse sets the header at once', () => {
    const res = new ServerResponse({ method: 'GET', headers: {}, httpVersionMajor: 1 } as IncomingMessage);
    listHeader(res, 'X-Request-Id', 'r5');
    assert.equal(res.getHeader('x-request-id'), 'r5');
  });

  test('for any sequence of listed and set headers, the wire carries what a plain response would', async () => {
    const header = fc.tuple(fc.constantFrom('X-A', 'X-B', 'x-a', 'X-C', 'x-z'), fc.stringMatching(/^[a-z0-9]{1,8}$/));
    const op = fc.oneof(
      header.map(([n, v]) => ({ kind: 'list' as const, n, v })),
      header.map(([n, v]) => ({ kind: 'set' as const, n, v })),
      fc.constantFrom('X-A', 'X-B').map((n) => ({ kind: 'remove' as const, n, v: '' })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 8 }), fc.boolean(), async (ops, viaSendListed) => {
        const play = (res: ServerResponse, listed: boolean) => {
          for (const o of ops) {
            if (o.kind === 'list')
              (listed ? listHeader : (r: ServerResponse, n: string, v: string) => r.setHeader(n, v))(res, o.n, o.v);
            else if (o.kind === 'set') res.setHeader(o.n, o.v);
            else res.removeHeader(o.n);
          }
        };
        const finish = (res: ServerResponse) => {
          if (!(
            viaSendListed &&
            res instanceof ListedHeadersResponse &&
            res.sendListed(200, ['X-Z', 'z', 'Content-Length', '1'], 'b')
          )) {
            res.setHeader('X-Z', 'z');
            res.end('b');
          }
        };
        handler = (_req, res) => {
          play(res, true);
          finish(res);
        };
        const listed = await raw();
        // The same operations with every header set at once, on a plain response's semantics.
        handler = (_req, res) => {
          play(res, false);
          res.setHeader('X-Z', 'z');
          res.end('b');
        };
        const plain = await raw();
        const lower = (lines: string[]) =>
          lines
            .filter((l) => !/^(date|connection|keep-alive|content-length|transfer-encoding):/i.test(l))
            .map((l) => l.toLowerCase())
            .sort();
        assert.deepEqual(lower(listed.lines), lower(plain.lines));
        assert.equal(listed.body, plain.body);
      }),
      { numRuns: 60 },
    );
  });
});
