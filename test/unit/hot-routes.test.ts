import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import Koa from 'koa';
import Router from '@koa/router';
import { HotRoutes, routePatterns } from '../../src/gateway/hot-routes.ts';
import type { AppState } from '../../src/gateway/context.ts';

/** Wired as app.ts wires it: hot routes → the main router's allowedMethods() → the main router. */
function app() {
  const calls: string[] = [];
  const feeds = new HotRoutes().get('/plain', (ctx) => {
    calls.push('plain');
    ctx.body = { route: 'plain' };
  });
  const probes = new HotRoutes().get('/probe', (ctx) => void (ctx.body = { route: 'probe' }));
  const hot = HotRoutes.routes([feeds, probes]);
  const rest = new Router<AppState>();
  rest.get('/items/:id', (ctx) => void (ctx.body = { id: ctx.params.id }));
  rest.post('/items', (ctx) => void (ctx.body = { route: 'post' }));
  const root = new Router<AppState>();
  root.use(rest.routes());
  const koa = new Koa<AppState>();
  let seen: string | undefined;
  koa.use(async (ctx, next) => {
    seen = undefined;
    await next();
    seen = (ctx as { routerPath?: string }).routerPath;
  });
  koa.use(hot);
  koa.use(root.allowedMethods());
  koa.use(root.routes());
  return { koa, calls, seen: () => seen, routeOf: routePatterns([hot.router, root]) };
}

test('hot routes: served by their own router with the route pattern set; other methods: 405 with Allow', async () => {
  const { koa, calls, seen } = app();
  const handle = koa.callback(); // answers every failure itself: its promise never rejects
  const server = createServer((req, res) => void handle(req, res)).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  try {
    const get = async (path: string, init?: RequestInit) => {
      const res = await fetch(base + path, init);
      const body = res.status === 200 && init?.method !== 'HEAD' ? await res.json() : null;
      return { status: res.status, body, route: seen(), allow: res.headers.get('allow') };
    };
    assert.deepEqual(await get('/plain'), { status: 200, body: { route: 'plain' }, route: '/plain', allow: null });
    assert.deepEqual(
      await get('/plain/'),
      { status: 200, body: { route: 'plain' }, route: '/plain', allow: null },
      'a trailing slash',
    );
    assert.deepEqual(await get('/plain', { method: 'HEAD' }), {
      status: 200,
      body: null,
      route: '/plain',
      allow: null,
    });
    assert.deepEqual(
      await get('/PLAIN'),
      { status: 200, body: { route: 'plain' }, route: '/plain', allow: null },
      'letter case',
    );
    assert.deepEqual(await get('/probe'), { status: 200, body: { route: 'probe' }, route: '/probe', allow: null });
    assert.deepEqual(
      calls,
      ['plain', 'plain', 'plain', 'plain'],
      'the one handler, by exact path or through the router',
    );
    assert.deepEqual(
      await get('/items/7'),
      { status: 200, body: { id: '7' }, route: '/items/:id', allow: null },
      'the main router',
    );
    const post = await get('/plain', { method: 'POST' });
    assert.equal(post.status, 405, 'a hot path called with another method');
    assert.deepEqual(post.allow?.split(', ').sort(), ['GET', 'HEAD']);
    assert.equal((await get('/items', { method: 'GET' })).status, 405, 'a main-router path called with another method');
    assert.equal((await get('/nothing')).status, 404);
  } finally {
    server.close();
  }
});

test('hot routes: only fixed paths, each declared once', () => {
  assert.throws(() => new HotRoutes().get('/items/:id', () => {}), /only fixed paths/);
  const a = new HotRoutes().get('/a', () => {});
  assert.deepEqual(a.paths, ['/a']);
  assert.throws(() => HotRoutes.routes([a, new HotRoutes().get('/a', () => {})]), /declared twice/);
});

test('route patterns: asked of the hot router and the main one, as refusals before routing are labelled', () => {
  const { routeOf } = app();
  assert.equal(routeOf('GET', '/plain'), '/plain');
  assert.equal(routeOf('GET', '/items/7'), '/items/:id');
  assert.equal(routeOf('POST', '/plain'), '/plain', 'a 405 is labelled by the path it hit');
  assert.equal(routeOf('GET', '/items'), '/items');
  assert.equal(routeOf('GET', '/nothing'), undefined);
});
