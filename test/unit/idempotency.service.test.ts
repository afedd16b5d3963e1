/**
 * The Idempotency-Key claim as a lease: the domain service over an in-memory store, with a fake clock
 * whose sleeps run only when the test moves time on (no real waiting, no timing assertions).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { IDEMPOTENCY_LEASE_MS, IdempotencyService, type StoredResponse } from '../../src/domain/idempotency.ts';
import { MemoryIdempotencyStore as MemoryStore } from '../support/memory-ports.ts';
import { AppError } from '../../src/domain/errors.ts';

/** Time that moves only when told; `sleep` resolves when the time it waits for is reached. */
class FakeTime {
  #t = Date.parse('2026-01-01T00:00:00Z');
  #sleepers: Array<{ at: number; wake: () => void }> = [];
  now = () => new Date(this.#t);
  sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const sleeper = { at: this.#t + ms, wake: resolve };
      this.#sleepers.push(sleeper);
      signal?.addEventListener('abort', () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        resolve();
      });
    });
  /** Moves time on by `ms`, waking every sleeper on the way in order and letting what it runs settle. */
  async advance(ms: number) {
    const end = this.#t + ms;
    for (;;) {
      await settle();
      const next = this.#sleepers.filter((s) => s.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.#t = next.at;
      this.#sleepers = this.#sleepers.filter((s) => s !== next);
      next.wake();
    }
    this.#t = end;
    await settle();
  }
  /** Moves time on in small steps until `p` settles (waiters poll on this clock). */
  async until<T>(p: Promise<T>): Promise<T> {
    let settled = false;
    const watched = p.finally(() => (settled = true));
    watched.catch(() => {});
    for (let i = 0; i < 600 && !settled; i++) await this.advance(100);
    if (!settled) throw new Error('did not settle within a minute of fake time');
    return watched;
  }
}

async function settle() {
  for (let i = 0; i < 20; i++) await tick();
}

/** A unit of work that finishes when the test says so, and records whether its signal aborted. */
function work(body: string) {
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  const w = {
    started: 0,
    signal: null as AbortSignal | null,
    finish: () => finish(),
    fn: async (signal: AbortSignal): Promise<StoredResponse> => {
      w.started++;
      w.signal = signal;
      await done; // like a step that cannot be interrupted: it ignores the signal
      return { status: 201, body };
    },
  };
  return w;
}

function fixture() {
  const time = new FakeTime();
  const store = new MemoryStore();
  const service = () => new IdempotencyService({ store, clock: { now: time.now }, sleep: time.sleep });
  return { time, store, service };
}

test(
  'a claim its holder stopped renewing (the process died) lapses after the lease: a retry then runs, ' +
    'and only one of two retries does',
  async () => {
    const { time, store, service } = fixture();
    // A process that dies while working: its work never ends and its timers never fire again (no renewal).
    const dead = new IdempotencyService({ store, clock: { now: time.now }, sleep: () => new Promise<void>(() => {}) });
    void dead.run('u', 'k', 'h', () => new Promise<StoredResponse>(() => {}));
    await time.advance(0);
    assert.equal(store.rows.get('u\nk')?.response, null, 'the dead process holds the claim');

    const a = work('A');
    const b = work('B');
    const svc = service();
    const retries = [svc.run('u', 'k', 'h', a.fn), service().run('u', 'k', 'h', b.fn)] as const;
    await time.advance(IDEMPOTENCY_LEASE_MS - 500);
    assert.equal(a.started + b.started, 0, 'within the lease the dead holder still has the key');
    await time.advance(1000);
    assert.equal(a.started + b.started, 1, 'once the lease has run out, exactly one retry takes the key over');
    a.finish();
    b.finish();
    const [ra, rb] = await time.until(Promise.all(retries));
    assert.equal(ra.body, rb.body, 'the other retry gets the same answer');
    assert.deepEqual([ra.replayed, rb.replayed].sort(), [false, true]);
    assert.equal((await time.until(svc.run('u', 'k', 'h', work('C').fn))).replayed, true);
  },
);

test(
  'a live holder that renews keeps the claim however long its work takes: ' +
    'a concurrent duplicate waits and gets its answer',
  async () => {
    const { time, store, service } = fixture();
    const a = work('A');
    const b = work('B');
    const first = service().run('u', 'k', 'h', a.fn);
    await time.advance(10);
    const second = service().run('u', 'k', 'h', b.fn);
    await time.advance(IDEMPOTENCY_LEASE_MS * 5);
    assert.equal(a.started, 1);
    assert.equal(b.started, 0, 'the duplicate never runs while the holder lives');
    assert.equal(a.signal!.aborted, false, 'the holder kept its claim');
    assert.ok(store.rows.get('u\nk')!.leaseUntil > time.now(), 'the lease was renewed');
    a.finish();
    const r1 = await first;
    const r2 = await time.until(second);
    assert.deepEqual(r1, { status: 201, body: 'A', replayed: false });
    assert.deepEqual(r2, { status: 201, body: 'A', replayed: true });
  },
);

test(
  'a holder that cannot renew (database down) stops its work before its lease runs out, ' +
    'and never records over the claim that took it over',
  async () => {
    const { time, store, service } = fixture();
    const a = work('A');
    const holder = service().run('u', 'k', 'h', a.fn);
    await time.advance(1000);
    assert.equal(a.started, 1);
    const leaseUntil = store.rows.get('u\nk')!.leaseUntil.getTime();
    store.down = true;
    let abortedAt = 0;
    a.signal!.addEventListener('abort', () => (abortedAt = time.now().getTime()));
    await time.advance(IDEMPOTENCY_LEASE_MS);
    assert.ok(a.signal!.aborted, 'the work was told to stop');
    assert.ok(
      abortedAt > 0 && abortedAt < leaseUntil,
      'it was told before its lease ran out (before anyone could take over)',
    );
    store.down = false;

    // The key lapsed: a retry takes it over and succeeds.
    const retry = await time.until(service().run('u', 'k', 'h', async () => ({ status: 201, body: 'B' })));
    assert.deepEqual(retry, { status: 201, body: 'B', replayed: false });

    // The old holder's work could not be interrupted and finishes after all: its result is not recorded.
    a.finish();
    const late = await time.until(holder);
    assert.equal(late.body, 'A');
    assert.deepEqual(store.rows.get('u\nk')!.response, { status: 201, body: 'B' }, "the record is the takeover's");
    assert.deepEqual(await time.until(service().run('u', 'k', 'h', work('C').fn)), {
      status: 201,
      body: 'B',
      replayed: true,
    });
  },
);

test(
  'a holder whose work fails after losing its claim answers 503 busy (retry with the same key), ' +
    'and the retry runs',
  async () => {
    const { time, store, service } = fixture();
    const holder = service()
      .run(
        'u',
        'k',
        'h',
        (signal) =>
          new Promise<StoredResponse>((_, reject) =>
            signal.addEventListener('abort', () => reject(new Error('aborted'))),
          ),
      )
      .then(
        () => assert.fail('the holder must not succeed'),
        (e: unknown) => e,
      );
    await time.advance(100);
    store.down = true;
    await time.advance(IDEMPOTENCY_LEASE_MS + 100);
    store.down = false;
    const err = await time.until(holder);
    assert.ok(err instanceof AppError && err.status === 503 && err.code === 'busy', String(err));
    assert.match(err.message, /Idempotency-Key/);
    assert.ok(Number(err.headers['Retry-After']) >= 1);
    const next = await time.until(service().run('u', 'k', 'h', async () => ({ status: 201, body: 'B' })));
    assert.equal(next.replayed, false);
  },
);

test('a holder whose claim was taken over (renewal finds another token) is told to stop at once', async () => {
  const { time, store, service } = fixture();
  const a = work('A');
  const holder = service().run('u', 'k', 'h', a.fn);
  await time.advance(100);
  // Someone else holds it now (as after a lapse the holder did not see, e.g. a stalled process).
  store.rows.get('u\nk')!.token = 'other';
  await time.advance(IDEMPOTENCY_LEASE_MS / 2);
  assert.ok(a.signal!.aborted);
  a.finish();
  await time.until(holder);
  assert.equal(store.rows.get('u\nk')!.response, null, 'nothing recorded over the other claim');
});
