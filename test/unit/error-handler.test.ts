import { test } from 'node:test';
import assert from 'node:assert/strict';
import Koa from 'koa';
import { createServer } from 'node:http';
import { errorHandler, toAppError } from '../../src/gateway/middleware/error-handler.ts';
import { AppError, errors } from '../../src/domain/errors.ts';

test(
  'an unexpected error becomes a 500 internal with no stack, SQL or path, ' + 'and is logged with the request id',
  async () => {
    const logged: unknown[] = [];
    const app = new Koa();
    app.silent = true;
    app.use(async (ctx, next) => {
      ctx.state.requestId = 'rid-1';
      ctx.state.log = { error: (obj: unknown) => logged.push(obj) };
      await next();
    });
    app.use(errorHandler());
    app.use(() => {
      throw new Error('SQLITE_ERROR: no such table: users at /work/main/src/store/x.ts:12');
    });
    const handle = app.callback(); // answers every failure itself: its promise never rejects
    const server = createServer((req, res) => void handle(req, res)).listen(0);
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
      assert.equal(res.status, 500);
      const text = await res.text();
      assert.deepEqual(JSON.parse(text), {
        error: 'internal',
        message: 'internal error; the request id identifies it in the server log',
      });
      assert.doesNotMatch(text, /SQLITE|\/work\/|at /);
      assert.equal(logged.length, 1);
      // Searchable like every failure line: the code, the route (none matched here), the request id.
      const { reqId, route, error } = logged[0] as Record<string, unknown>;
      assert.deepEqual({ reqId, route, error }, { reqId: 'rid-1', route: 'unmatched', error: 'internal' });
    } finally {
      server.close();
    }
  },
);

test('toAppError maps body-parser failures onto the contract', () => {
  assert.equal(
    toAppError(Object.assign(new Error('too big'), { status: 413, type: 'entity.too.large' })).code,
    'payload_too_large',
  );
  assert.equal(
    toAppError(Object.assign(new Error('bad'), { status: 400, type: 'entity.parse.failed' })).code,
    'invalid_request',
  );
  assert.equal(
    toAppError(Object.assign(new Error('maxFileSize exceeded'), { httpCode: 413 })).code,
    'payload_too_large',
  );
  const passthrough = errors.forbidden('no');
  assert.equal(toAppError(passthrough), passthrough);
  assert.ok(toAppError('a string') instanceof AppError);
});

test('rate_limited and busy carry Retry-After in whole seconds, at least 1', () => {
  assert.equal(errors.rateLimited('x', 0.2).headers['Retry-After'], '1');
  assert.equal(errors.rateLimited('x', 61.5).headers['Retry-After'], '62');
  assert.equal(errors.busy('x').headers['Retry-After'], '1');
});
