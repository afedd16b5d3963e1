/**
 * MAX_CONNECTIONS_PER_IP (API.md Operations): one client address holds at most that many open connections;
 * past it new ones are refused (a 503 `busy` with the contract's body, then closed), counted in /metrics and
 * logged, once per address per interval however many are refused. Closing connections lets new ones in.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { currentMetrics, startApp, type TestApp } from '../support/app.ts';
import { openRaw, type RawConnection } from '../support/raw-http.ts';

const MAX = 4;
const logs: Array<Record<string, unknown>> = [];
const log = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });

let app: TestApp;
before(async () => {
  app = await startApp({ MAX_CONNECTIONS_PER_IP: String(MAX) }, { log });
});
after(() => app?.close());

const refusals = async () =>
  Number(/^pixvote_connections_refused_total (\d+)$/m.exec(await currentMetrics(app))?.[1] ?? Number.NaN);

/** A connection that serves a request: /healthz answered 200 on it, the connection kept open. */
async function assertServes(c: RawConnection): Promise<void> {
  c.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  const r = await c.reply();
  assert.equal(r.status, 200);
  assert.ok(!c.isClosed(), 'kept open');
}

async function assertRefused(c: RawConnection): Promise<void> {
  const r = await c.reply();
  assert.equal(r.status, 503);
  assert.equal(r.body.error, 'busy');
  assert.match(r.body.message, new RegExp(`at most ${MAX}`));
  assert.equal(r.headers['retry-after'], '1');
  await c.closed();
}

/** A new connection once the server has seen enough of the closed ones go (their close reaches it shortly after). */
async function admitted(): Promise<RawConnection> {
  for (;;) {
    const c = await openRaw(app.url);
    c.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const r = await c.reply();
    if (r.status === 200) return c;
    await new Promise((res) => setTimeout(res, 20));
  }
}

test('past MAX_CONNECTIONS_PER_IP new connections are refused, logged once; closing some lets others in', async () => {
  const before = await refusals();
  const held: RawConnection[] = [];
  for (let i = 0; i < MAX; i++) held.push(await openRaw(app.url));
  for (const c of held) await assertServes(c);

  // Three past the cap, all refused while the first four stay open and keep serving.
  for (let i = 0; i < 3; i++) await assertRefused(await openRaw(app.url));
  await assertServes(held[0]!);
  assert.equal((await refusals()) - before, 3, 'each refusal counted in /metrics');

  // Two closed: two new ones get in (a refused try while the server has not seen the close yet is retried).
  for (const c of held.splice(0, 2)) c.socket.destroy();
  held.push(await admitted(), await admitted());
  for (const c of held) await assertServes(c);
  await assertRefused(await openRaw(app.url));

  const lines = logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('connection refused'));
  assert.equal(lines.length, 1, 'one line per address per interval, however many refusals');
  assert.equal(lines[0]!.address, '127.0.0.1');
  assert.equal(lines[0]!.max, MAX);
  assert.equal(lines[0]!.level, 40, 'a warning');
  for (const c of held) c.socket.destroy();
});

test('MAX_CONNECTIONS_PER_IP=0: no cap', async () => {
  const open = await startApp({ MAX_CONNECTIONS_PER_IP: '0' });
  try {
    const held: RawConnection[] = [];
    for (let i = 0; i < 20; i++) held.push(await openRaw(open.url));
    for (const c of held) await assertServes(c);
    for (const c of held) c.socket.destroy();
  } finally {
    await open.close();
  }
});
