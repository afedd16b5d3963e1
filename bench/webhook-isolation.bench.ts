/**
 * Webhook isolation (issue 44 item 4): another account's delivery lag while one account's `hanging` endpoints
 * accept the connection and never answer, against the same lag with no hanging endpoint (the yardstick), in
 * interleaved rounds on the real database and the real sender. The delivery loop runs as a gateway runs it
 * (src/main.ts: a RepeatingJob kicked every WEBHOOK_INTERVAL_MS, the dispatcher's default slots, a 10 s timeout).
 *
 * Each round: the other account's `events` events, one every 250 ms, with nothing else queued (idle); then the
 * attacker's two uploads (2 × `hanging` deliveries, all hanging) followed by the other account's `events` events
 * (under attack). A lag is from the event's commit to its arrival at the receiver. Goal: under 2 s (issue 44).
 *
 *   npm run bench:webhook-isolation [-- --db sqlite|postgres --rounds 3 --hanging 24 --events 8]
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { DEFAULT_RETRY_SCHEDULE_MS, WebhookDispatcher } from '../src/domain/webhooks/dispatcher.ts';
import { RepeatingJob } from '../src/domain/moderation/hold-job.ts';
import { postWebhook } from '../src/net/webhook-post.ts';
import type { Database } from '../src/store/database.ts';
import { emitEvent } from '../src/store/webhooks/outbox.ts';
import { WebhookRepository } from '../src/store/webhooks/webhook.repository.ts';
import { insertUser } from '../test/support/users.ts';
import { createBenchDatabase, type DbKind } from './support/bench-database.ts';
import { isMain, runAlone } from './support/cli.ts';
import { atMost, figure, type Recorder } from './support/report.ts';
import { median, ratios } from './support/stats.ts';

const TIMEOUT_MS = 10_000;
const INTERVAL_MS = 1_000;
const EVENT_GAP_MS = 250;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** A local HTTP server: `hang` paths are accepted and never answered; others answer 204 and note the arrival. */
async function startServer(onArrival: (body: string) => void) {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url?.startsWith('/hang')) return;
      onArrival(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export async function webhookIsolationBench(
  rec: Recorder,
  opts: { db: DbKind; rounds: number; hanging: number; events: number },
): Promise<void> {
  const bench = await createBenchDatabase(opts.db);
  const lags = new Map<string, number>();
  const server = await startServer((body) => {
    const { data } = JSON.parse(body) as { data: { n: string; at: number } };
    lags.set(data.n, Date.now() - data.at);
  });
  let db: Database | null = null;
  try {
    db = await bench.open();
    const repo = new WebhookRepository(db);
    const at = new Date();
    const attacker = await insertUser(db, at);
    const other = await insertUser(db, at);
    const add = (userId: string, path: string) =>
      repo.create({
        id: randomUUID(),
        userId,
        url: `${server.url}${path}`,
        description: '',
        events: ['upload.processed'],
        secret: SECRET,
        at,
      });
    for (let i = 0; i < opts.hanging; i++) await add(attacker, `/hang-${i}`);
    await add(other, '/other');
    const dispatcher = new WebhookDispatcher({
      store: repo,
      clock: { now: () => new Date() },
      owner: `bench-${process.pid}`,
      schedule: DEFAULT_RETRY_SCHEDULE_MS,
      leaseMs: 2 * TIMEOUT_MS + 5_000,
      pollMs: INTERVAL_MS,
      send: (url, headers, body, signal) =>
        postWebhook(url, headers, body, { timeoutMs: TIMEOUT_MS, allowPrivate: true, signal }),
    });
    const emit = (ownerId: string, data: Record<string, unknown>) =>
      db!.transaction((_em, tx) =>
        emitEvent(tx, db!.dialect, { type: 'upload.processed', ownerId, data, at: new Date() }),
      );
    let n = 0;
    /** The other account's events, one every EVENT_GAP_MS; resolves with their lags (ms) once all arrived. */
    const otherLags = async (): Promise<number[]> => {
      const ids: string[] = [];
      for (let i = 0; i < opts.events; i++) {
        const id = String(++n);
        ids.push(id);
        await emit(other, { n: id, at: Date.now() });
        await new Promise((r) => setTimeout(r, EVENT_GAP_MS));
      }
      const deadline = Date.now() + 120_000;
      while (!ids.every((id) => lags.has(id))) {
        if (Date.now() > deadline) throw new Error('the other account’s deliveries did not all arrive in 120 s');
        await new Promise((r) => setTimeout(r, 20));
      }
      return ids.map((id) => lags.get(id)!);
    };
    /** One phase with the loop running as a gateway runs it; the attacker's deliveries are dropped afterwards. */
    const phase = async (attack: boolean): Promise<number[]> => {
      const loop = new RepeatingJob(
        (signal) => dispatcher.run(signal),
        (err) => console.error(err),
        {
          everyMs: INTERVAL_MS,
          atStart: true,
        },
      );
      loop.start();
      try {
        if (attack) for (let i = 0; i < 2; i++) await emit(attacker, { n: `attack-${++n}`, at: Date.now() });
        return await otherLags();
      } finally {
        await loop.stop();
        await db!.db().deleteFrom('webhook_deliveries').execute();
      }
    };
    const idle: number[][] = [];
    const attacked: number[][] = [];
    for (let r = 0; r < opts.rounds; r++) {
      idle.push(await phase(false));
      attacked.push(await phase(true));
    }
    const p50 = (x: number[][]) => x.map((l) => median(l));
    const max = (x: number[][]) => x.map((l) => Math.max(...l));
    const what = `${opts.hanging} endpoints of one account hanging`;
    rec.add(
      figure('webhook-isolation', `other account's delivery lag p50, idle (${opts.db})`, 'ms', p50(idle)),
      figure('webhook-isolation', `other account's delivery lag max, idle (${opts.db})`, 'ms', max(idle)),
      figure('webhook-isolation', `other account's delivery lag p50, ${what} (${opts.db})`, 'ms', p50(attacked)),
      figure('webhook-isolation', `other account's delivery lag max, ${what} (${opts.db})`, 'ms', max(attacked), {
        target: atMost(2000),
      }),
      figure('webhook-isolation', `lag p50 with ${what} ÷ idle (${opts.db})`, '×', ratios(p50(attacked), p50(idle))),
    );
    rec.note(
      `webhook isolation: ${opts.rounds} rounds of ${opts.events} events; poll every ${INTERVAL_MS} ms (a lag ` +
        `includes the wait for the next poll, up to ${INTERVAL_MS} ms); timeout ${TIMEOUT_MS} ms`,
    );
  } finally {
    await db?.close();
    await server.close();
    await bench.dispose();
  }
}

if (isMain(import.meta.url)) {
  await runAlone(
    'webhook-isolation',
    {
      db: { type: 'string', default: 'sqlite' },
      rounds: { type: 'string', default: '3' },
      hanging: { type: 'string', default: '24' },
      events: { type: 'string', default: '8' },
    },
    (rec, v) =>
      webhookIsolationBench(rec, {
        db: v.db === 'postgres' ? 'postgres' : 'sqlite',
        rounds: Number(v.rounds),
        hanging: Number(v.hanging),
        events: Number(v.events),
      }),
  );
}
