import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import Koa from 'koa';
import Router from '@koa/router';
import { exactGetRoutes } from '../../src/gateway/exact-routes.ts';
import type { AppState } from '../../src/gateway/context.ts';

function app() {
  const r = new Router<AppState>();
  const calls: string[] = [];
  r.get('/plain', (ctx) => void (ctx.body = { route: 'plain' }));
  r.get('/items/:id', (ctx) => void (ctx.body = { id: ctx.params.id }));
  r.post('/plain', (ctx) => void (ctx.body = { route: 'post' }));
  const guarded = new Router<AppState>();
  guarded.use('/guarded', async (_ctx, next) => {
    calls.push('guard');
    await next();
  });
  guarded.get('/guarded', (ctx) => void (ctx.body = { route: 'guarded' }));
  const chained = new Router<AppState>();
  chained.get(
    '/chained',
    async (ctx, next) => {
      calls.push('first');
      await next();
    },
    (ctx) => void (ctx.body = { route: 'chained' }),
  );
  const root = new Router<AppState>();
  for (const x of [r, guarded, chained]) root.use(x.routes());
  const lane = exactGetRoutes(root);
  const koa = new Koa<AppState>();
  let seen: string | undefined;
  koa.use(async (ctx, next) => {
    await next();
    seen = (ctx as { _matchedRoute?: string })._matchedRoute;
  });
  koa.use(lane);
  koa.use(root.routes());
  return { koa, lane, calls, seen: () => seen };
}

test('exact GET routes: fixed paths are looked up directly, with the same answer and route pattern as the router', async () => {
  const { koa, lane, calls, seen } = app();
  // A middleware mounted on a path keeps that path on the router; parameters and other methods too.
  assert.deepEqual(lane.paths.sort(), ['/chained', '/plain']);
  const handle = koa.callback(); // answers every failure itself: its promise never rejects
  const server = createServer((req, res) => void handle(req, res)).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  try {
    const get = async (path: string, init?: RequestInit) => {
      const res = await fetch(base + path, init);
      return {
        status: res.status,
        body: res.status === 200 && init?.method !== 'HEAD' ? await res.json() : null,
        route: seen(),
      };
    };
    assert.deepEqual(await get('/plain'), { status: 200, body: { route: 'plain' }, route: '/plain' });
    assert.deepEqual(
      await get('/plain/'),
      { status: 200, body: { route: 'plain' }, route: '/plain' },
      'a trailing slash goes through the router, same answer',
    );
    assert.deepEqual(await get('/plain', { method: 'HEAD' }), { status: 200, body: null, route: '/plain' });
    assert.deepEqual(await get('/plain', { method: 'POST' }), {
      status: 200,
      body: { route: 'post' },
      route: '/plain',
    });
    assert.deepEqual(await get('/items/7'), { status: 200, body: { id: '7' }, route: '/items/:id' });
    assert.deepEqual(await get('/guarded'), { status: 200, body: { route: 'guarded' }, route: '/guarded' });
    assert.deepEqual(await get('/chained'), { status: 200, body: { route: 'chained' }, route: '/chained' });
    assert.deepEqual(calls, ['guard', 'first'], 'the path-mounted middleware ran, and a chain runs whole');
    assert.equal((await get('/nothing')).status, 404);
  } finally {
    server.close();
  }
});
