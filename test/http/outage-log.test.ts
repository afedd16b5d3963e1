/**
 * The log of a database outage as an operator reads it (issue 44 item 8): with the delivery loop polling every
 * 100 ms and no webhook registered, a PostgreSQL outage of a few seconds logs one line when the database goes
 * (naming it, no stack) and one when it is back (with the outage's length) — not a failed run with a stack per poll.
 * The database is cut by a proxy that refuses every connection (test/support/fault-proxy.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { startApp } from '../support/app.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres, TEST_PG_URL } from '../support/env.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { eventually } from '../support/webhook-receiver.ts';

interface Line {
  level: number;
  msg: string;
  err?: { stack?: string };
  dependency?: string;
}

test(
  'PostgreSQL down for a while: one line when it goes, one when it is back, no stack; the loops resume',
  { skip: !onPostgres && 'PostgreSQL only (SQLite is a file: it has no outage to log)' },
  async () => {
    const lines: Line[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
    const database = await createTestDatabase();
    const pgUrl = new URL(TEST_PG_URL);
    const proxy = await startFaultProxy(`http://${pgUrl.hostname}:${pgUrl.port || 5432}`);
    const url = new URL(database.url);
    url.hostname = '127.0.0.1';
    url.port = new URL(proxy.url).port;
    const app = await startApp({ WEBHOOK_INTERVAL_MS: '100', LOG_LEVEL: 'info' }, { databaseUrl: url.toString(), log });
    try {
      const before = lines.length;
      proxy.set('refuse');
      await eventually(async () => (await app.api.get('/readyz')).status === 503, 30_000, 'the database to be down');
      // Many polls of the delivery loop meet the outage (each used to log a failure with its stack).
      await new Promise((r) => setTimeout(r, 3000));
      proxy.set('pass');
      await eventually(async () => (await app.api.get('/readyz')).status === 200, 30_000, 'the database back');
      await new Promise((r) => setTimeout(r, 2000)); // the tracker probes every second; a late failure shows too
      // Warnings and the outage's lines, but for the answers to the test's own /readyz requests.
      const during = lines
        .slice(before)
        .filter((l) => (l.level >= 40 || l.dependency) && l.msg !== 'readiness check failed');
      assert.deepEqual(
        during.map((l) => l.msg.replace(/\d+\.\d s$/, 'N s')),
        ['database unavailable; background jobs wait for it', 'database is back after N s'],
        JSON.stringify(during, null, 1).slice(0, 4000),
      );
      assert.ok(
        during.every((l) => !l.err),
        'no stack',
      );
      const back = during[1] as Line & { outageSeconds: number };
      assert.ok(back.outageSeconds >= 3, `the outage lasted ${back.outageSeconds} s`);
    } finally {
      await app.close();
      await proxy.close();
      await database.drop();
    }
  },
);
