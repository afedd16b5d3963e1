/** The rules of moderation that need no database: who reaches an upload, bans, person review, the hash set, the job. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertReachable } from '../../src/domain/moderation/access.ts';
import { banEndView } from '../../src/domain/moderation/moderation.service.ts';
import { BAN_PERMANENT } from '../../src/domain/moderation/moderation.types.ts';
import { RepeatingJob } from '../../src/domain/moderation/hold-job.ts';
import { personReview, personVerdict } from '../../src/domain/person-policy.ts';
import { banRefusal } from '../../src/domain/users.ts';
import { PhashSet } from '../../src/store/moderation/phash-set.ts';
import { hammingHex } from '../../src/store/similarity/hamming.ts';
import { seededRandom } from '../support/fixtures.ts';
import { flipBits } from '../support/hashes.ts';

const owner = { userId: 'o', isAdmin: false };
const stranger = { userId: 's', isAdmin: false };
const admin = { userId: 'a', isAdmin: true };
const upload = (moderation: 'visible' | 'held' | 'removed') => ({ id: 'u1', userId: 'o', moderation });
const codeOf = (fn: () => void) => {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return (e as { code: string }).code;
  }
};

describe('who reaches an upload', () => {
  test('visible: everyone; held: owner and admins (others 404); removed: admins (others 410)', () => {
    const table = [null, stranger, owner, admin].map((r) =>
      (['visible', 'held', 'removed'] as const).map((m) => codeOf(() => assertReachable(upload(m), r))),
    );
    assert.deepEqual(table, [
      ['ok', 'not_found', 'removed'],
      ['ok', 'not_found', 'removed'],
      ['ok', 'ok', 'removed'],
      ['ok', 'ok', 'ok'],
    ]);
  });
});

describe('bans', () => {
  const now = new Date('2026-11-25T12:00:00.000Z');
  test('banned while the end is in the future; the message says until when, or permanently', () => {
    assert.equal(banRefusal({ bannedUntil: null }, now), null);
    assert.equal(banRefusal({ bannedUntil: new Date('2026-11-25T11:59:59.999Z') }, now), null);
    assert.match(banRefusal({ bannedUntil: new Date('2026-12-01T00:00:00.000Z') }, now)!, /until 2026-12-01T00:00/);
    assert.match(banRefusal({ bannedUntil: BAN_PERMANENT }, now)!, /permanently/);
  });
  test('banned_until as the API shows it', () => {
    assert.equal(banEndView(null, now), null);
    assert.equal(banEndView(new Date('2026-01-01T00:00:00.000Z'), now), null);
    assert.equal(banEndView(BAN_PERMANENT, now), 'permanent');
    assert.equal(banEndView(new Date('2026-12-01T00:00:00.000Z'), now), '2026-12-01T00:00:00.000Z');
  });
});

describe('person review', () => {
  const at = (sure: number, review = sure) => ({ sure, review });
  const review = (...args: Parameters<typeof personVerdict>) => personReview(personVerdict(...args));

  test('flag and hold queue a person at or above the threshold; hold also holds; reject and off never queue', () => {
    assert.deepEqual(review('flag', at(0.2), 0.2), { flag: true, hold: false });
    assert.deepEqual(review('hold', at(0.2), 0.9), { flag: true, hold: true });
    assert.deepEqual(review('hold', at(0.2), 0.19), { flag: false, hold: false });
    assert.deepEqual(review('hold', at(0.2), null), { flag: false, hold: false });
    assert.deepEqual(review('reject', at(0.2), 0.9), { flag: false, hold: false });
    assert.deepEqual(review('off', at(0.2), 0.9), { flag: false, hold: false });
  });

  describe('reject with a gray zone (review 0.3, sure 0.5)', () => {
    const t = at(0.5, 0.3);
    const decision = (score: number | null) => personVerdict('reject', t, score).decision;
    test('just under review: accepted', () => assert.equal(decision(0.2999), 'accept'));
    test('at review: held, flagged, in the gray zone', () => {
      assert.deepEqual(personVerdict('reject', t, 0.3), { decision: 'hold', grayZone: true });
      assert.deepEqual(review('reject', t, 0.3), { flag: true, hold: true });
    });
    test('just under sure: held', () => assert.equal(decision(0.4999), 'hold'));
    test('at sure: refused, naming the score and the sure threshold', () => {
      const v = personVerdict('reject', t, 0.5);
      assert.equal(v.decision, 'refuse');
      assert.match(v.decision === 'refuse' ? v.message : '', /score 0\.500, threshold 0\.5\)/);
      assert.deepEqual(review('reject', t, 0.5), { flag: false, hold: false });
    });
    test('above sure: refused', () => assert.equal(decision(0.97), 'refuse'));
    test('no score (detection off): accepted', () => assert.equal(decision(null), 'accept'));
  });

  test('equal review and sure thresholds turn the gray zone off', () => {
    assert.equal(personVerdict('reject', at(0.5, 0.5), 0.4999).decision, 'accept');
    assert.equal(personVerdict('reject', at(0.5, 0.5), 0.5).decision, 'refuse');
  });

  test('the review threshold changes nothing under flag, hold and off (their line is the sure one)', () => {
    const t = at(0.5, 0.3);
    for (const score of [0.2999, 0.3, 0.4999]) {
      assert.equal(personVerdict('flag', t, score).decision, 'accept', `flag ${score}`);
      assert.equal(personVerdict('hold', t, score).decision, 'accept', `hold ${score}`);
      assert.equal(personVerdict('off', t, score).decision, 'accept', `off ${score}`);
    }
    assert.deepEqual(personVerdict('flag', t, 0.5), { decision: 'flag' });
    assert.deepEqual(personVerdict('hold', t, 0.5), { decision: 'hold', grayZone: false });
    assert.deepEqual(personVerdict('off', t, 0.99), { decision: 'accept' });
  });
});

describe('PhashSet (in-memory multi-index hashing)', () => {
  const rand = seededRandom(42);
  const hex = () => Array.from({ length: 16 }, () => Math.floor(rand() * 16).toString(16)).join('');
  const set = Array.from({ length: 300 }, hex);
  const queriesAt = (d: number) => [
    ...Array.from({ length: 200 }, hex),
    ...set.slice(0, 100).map((h, i) => flipBits(h, i % (d + 3), rand)),
  ];
  test('answers exactly as a brute-force scan, at several distances (expand: built for one)', () => {
    for (const d of [0, 4, 8, 11]) {
      const index = new PhashSet(set, d);
      for (const q of queriesAt(d)) {
        const expected = set.some((h) => hammingHex(h, q) <= d);
        assert.equal(index.matches(q), expected, `d=${d} q=${q}`);
      }
      assert.throws(() => index.matches(set[0]!, d + 1), /within/, 'an expanded set answers at its own distance only');
    }
  });
  test('the probe layout (the upload check’s copy) answers at any distance asked, as a brute-force scan', () => {
    const index = new PhashSet(set, 0, 'probe');
    let matched = 0;
    for (const d of [0, 3, 4, 8, 11, 16]) {
      for (const q of queriesAt(d)) {
        const expected = set.some((h) => hammingHex(h, q) <= d);
        assert.equal(index.matches(q, d), expected, `d=${d} q=${q}`);
        if (expected) matched++;
      }
      assert.equal(index.matches(set[0]!, -1), false, 'a negative distance: not checked');
    }
    assert.ok(matched > 300, `hits exercised (${matched})`);
  });
});

describe('RepeatingJob', () => {
  test('one run at a time; kicks during a run make exactly one more run', async () => {
    let runs = 0;
    let active = 0;
    let release!: () => void;
    const job = new RepeatingJob(
      async () => {
        runs++;
        active++;
        assert.equal(active, 1, 'never two at once');
        if (runs === 1) await new Promise<void>((r) => (release = r));
        active--;
      },
      () => assert.fail('no error expected'),
    );
    job.kick();
    job.kick();
    job.kick();
    release();
    await job.idle();
    assert.equal(runs, 2);
    await job.stop();
  });

  test("stop() aborts the run's signal and waits for the run to end", async () => {
    const seen: boolean[] = [];
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const job = new RepeatingJob(
      async (signal) => {
        started();
        while (!signal.aborted) await new Promise((r) => setTimeout(r, 1));
        seen.push(signal.aborted);
      },
      () => assert.fail('no error expected'),
    );
    job.kick();
    await running;
    await job.stop();
    assert.deepEqual(seen, [true], 'the run saw the abort and ended before stop() resolved');
  });

  test('an error is reported and the job keeps working', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const job = new RepeatingJob(
      async () => {
        if (++runs === 1) throw new Error('database down');
      },
      (e) => errors.push(e),
    );
    job.kick();
    await job.stop();
    job.kick();
    await job.stop();
    assert.equal(runs, 2);
    assert.equal(errors.length, 1);
  });
});
