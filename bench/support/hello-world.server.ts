/**
 * The gateway's yardstick: a bare Koa hello-world answering a small JSON body, started like the app
 * (its own process, PORT and HOST from the environment). `/?bytes=N` answers a JSON body of N bytes
 * instead, to tell what a page costs for its size alone from what the app's middleware costs.
 */
import Koa from 'koa';

const bodies = new Map<number, string>();
const padded = (n: number) => `{"pad":"${'x'.repeat(Math.max(0, n - 10))}"}`;

const app = new Koa();
app.use(async function hello(ctx) {
  const n = Number(ctx.query.bytes);
  if (!n) {
    ctx.body = { hello: 'world' };
    return;
  }
  if (!bodies.has(n)) bodies.set(n, padded(n));
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = bodies.get(n);
});
app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
