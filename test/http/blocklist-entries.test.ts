/**
 * POST /api/admin/blocklist against a model written from API.md (Moderation, Blocklist; both databases), with
 * entries fast-check writes in every spelling a client might send: a hash in upper, lower or mixed case is the same
 * entry, stored once in lowercase (GET /api/admin/blocklist) and in effect (an image upload whose SHA-256 it names is
 * 400 `blocked_content`, POST /api/uploads/check says `blocked`); a hash that is not exactly its count of hex digits
 * (`0x`, spaces around, 63/65/15/17 digits, non-hex, full-width digits, NUL, "", a number) or an entry without a hash
 * makes the whole request 400 naming `entries.<index>` and the field, with nothing stored; `added + skipped` is the
 * number of entries sent, repeats within a request and across requests being skipped; never a 500.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { startApp, type TestApp } from '../support/app.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';

let app: TestApp;
let admin: TestUser;
let owner: TestUser;

before(async () => {
  app = await startApp();
  admin = await registerAdmin(app, `bl_${Math.random().toString(36).slice(2, 8)}`);
  owner = await registerUser(app.api);
});
after(() => app.close());

type Field = 'sha256' | 'phash' | 'pdq';
const FIELDS: readonly Field[] = ['sha256', 'phash', 'pdq'];
/** API.md: a SHA-256 and a PDQ are 64 hex digits, a perceptual hash 16. */
const DIGITS: Record<Field, number> = { sha256: 64, phash: 16, pdq: 64 };

/** One entry as the model holds it: its hashes in canonical form (lowercase hex), null where it has none. */
type Canonical = Record<Field, string | null>;
const keyOf = (e: Canonical) => `${e.sha256}|${e.phash}|${e.pdq}`;

/** How a field is written in the request body: its value, or absent; and what the model makes of it. */
interface Written {
  value?: unknown;
  /** The canonical hash; null for no hash (absent or null) and for a broken one. */
  reads: string | null;
}

const hexOf = (n: number) =>
  fc
    .array(fc.integer({ min: 0, max: 15 }), { minLength: n, maxLength: n })
    .map((d) => d.map((x) => x.toString(16)).join(''));

/** `hex` with each letter in the case `upper` draws (all lower, all upper, or mixed). */
const spelled = (hex: string) =>
  fc
    .oneof(fc.constant([false]), fc.constant([true]), fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }))
    .map((upper) => [...hex].map((c, i) => (upper[i % upper.length] ? c.toUpperCase() : c)).join(''));

/** What a client might send for a hash of `n` digits that is not one: each is no hash of the contract's form. */
const broken = (hex: string): fc.Arbitrary<unknown> => {
  const n = hex.length;
  const at = fc.integer({ min: 0, max: n - 1 });
  return fc.oneof(
    fc.constant(`0x${hex}`),
    fc.constant(`0X${hex.toUpperCase()}`),
    fc.constantFrom(' ', '\t', '\n', '\u00a0').map((s) => `${s}${hex}`),
    fc.constantFrom(' ', '\t', '\n').map((s) => `${hex}${s}`),
    fc.constant(hex.slice(1)),
    fc.constant(`${hex}0`),
    fc.constant(hex.slice(0, n / 2)),
    fc
      .tuple(at, fc.constantFrom('g', 'G', 'x', '-', ':', ' ', '\u0000', 'é'))
      .map(([i, c]) => hex.slice(0, i) + c + hex.slice(i + 1)),
    // A full-width digit or letter (U+FF10–U+FF19, U+FF21–U+FF26): the same to a reader, no hex digit.
    at.map((i) => hex.slice(0, i) + String.fromCharCode(hex.charCodeAt(i) + 0xfee0) + hex.slice(i + 1)),
    fc.constant(`${hex}\u0000`),
    fc.constant(''),
    fc.constant(0),
    fc.constant(Number.parseInt(hex.slice(0, 8), 16)),
    fc.constant([hex]),
    fc.constant({ hex }),
    fc.constant(true),
  );
};

/** A field of an entry: absent, null, a valid hash in some case, or a broken one. */
const field = (f: Field, valid: boolean): fc.Arbitrary<Written> =>
  hexOf(DIGITS[f]).chain((hex) =>
    valid
      ? fc.oneof(
          { weight: 3, arbitrary: spelled(hex).map((value): Written => ({ value, reads: hex })) },
          { weight: 1, arbitrary: fc.constant<Written>({ reads: null }) },
          { weight: 1, arbitrary: fc.constant<Written>({ value: null, reads: null }) },
        )
      : broken(hex).map((value): Written => ({ value, reads: null })),
  );

interface Drawn {
  body: Record<string, unknown>;
  /** The entry as the model reads it, or why it is refused (the field named, or 'hash' for an entry with none). */
  reads: Canonical | { invalid: Field | 'reason' | 'hash' };
}

const reasonText = fc.oneof(
  fc.constant(undefined),
  fc.string({ maxLength: 40 }).filter((s) => !s.includes('\0')),
);

/** A valid entry (at least one hash; the rest absent or null). */
const validEntry: fc.Arbitrary<Drawn> = fc
  .record({ sha256: field('sha256', true), phash: field('phash', true), pdq: field('pdq', true), reason: reasonText })
  .filter((w) => FIELDS.some((f) => w[f].reads !== null))
  .map((w) => ({
    body: Object.fromEntries([
      ...FIELDS.filter((f) => 'value' in w[f]).map((f) => [f, w[f].value]),
      ...(w.reason === undefined ? [] : [['reason', w.reason]]),
    ]),
    reads: { sha256: w.sha256.reads, phash: w.phash.reads, pdq: w.pdq.reads },
  }));

/** An entry refused by the contract: one broken hash, no hash at all, or a reason that no database holds (NUL). */
const invalidEntry: fc.Arbitrary<Drawn> = fc.oneof(
  fc
    .tuple(validEntry, fc.constantFrom(...FIELDS))
    .chain(([e, f]) => field(f, false).map((w) => ({ body: { ...e.body, [f]: w.value }, reads: { invalid: f } }))),
  fc.tuple(fc.subarray([...FIELDS]), reasonText).map(([nulls, reason]) => ({
    body: { ...Object.fromEntries(nulls.map((f) => [f, null])), ...(reason === undefined ? {} : { reason }) },
    reads: { invalid: 'hash' as const },
  })),
  validEntry.map((e) => ({ body: { ...e.body, reason: 'a\u0000b' }, reads: { invalid: 'reason' as const } })),
);

/** Every entry of the blocklist, through GET /api/admin/blocklist page by page (limit 50, the most it gives). */
async function listed(): Promise<Canonical[]> {
  const all: Canonical[] = [];
  for (let page = 1; ; page++) {
    const res = await app.api.get(`/api/admin/blocklist?page=${page}&limit=50`, { token: admin.token });
    assert.equal(res.status, 200, res.text);
    all.push(...(res.body.entries as Canonical[]).map((e) => ({ sha256: e.sha256, phash: e.phash, pdq: e.pdq })));
    if (!res.body.has_more) return all;
  }
}

/** The entry `c` written again, each of its hashes in a case drawn anew. */
const respelled = (c: Canonical): fc.Arbitrary<Drawn> =>
  fc.tuple(...FIELDS.map((f) => (c[f] === null ? fc.constant(null) : spelled(c[f])))).map((vals) => ({
    body: Object.fromEntries(FIELDS.flatMap((f, i) => (vals[i] === null ? [] : [[f, vals[i]]]))),
    reads: c,
  }));

const post = (entries: unknown[]) => app.api.post('/api/admin/blocklist', { entries }, { token: admin.token });

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('POST /api/admin/blocklist', () => {
  // First in the file, while the blocklist holds only what this test adds: no entry of the model test below comes
  // near these images' perceptual hashes.
  test('a SHA-256 in any case blocks the image it names; one sent in a refused request blocks nothing', async () => {
    let seed = 7100;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }), fc.boolean(), async (upper, refused) => {
        const bytes = await photoJpeg({ width: 96, height: 72, seed: ++seed, metadata: false });
        const digest = sha256(bytes);
        const written = [...digest].map((c, i) => (upper[i % upper.length] ? c.toUpperCase() : c)).join('');
        const entries: unknown[] = [{ sha256: written, reason: 'property' }];
        if (refused) entries.push({ sha256: `0x${digest}` });
        const res = await post(entries);
        assert.equal(res.status, refused ? 400 : 200, res.text);
        const check = await app.api.post('/api/uploads/check', { sha256: [digest] }, { token: owner.token });
        assert.equal(check.status, 200, check.text);
        assert.equal(check.body.results[0].status, refused ? 'new' : 'blocked', written);
        const up = await uploadImage(app.api, owner.token, bytes, { is_private: 'true' });
        if (refused) assert.equal(up.status, 201, up.text);
        else {
          assert.equal(up.status, 400, up.text);
          assert.equal(up.body.error, 'blocked_content');
        }
      }),
      { numRuns: 8 },
    );
  });

  test('0 and 10 001 entries are refused naming entries, with nothing stored', async () => {
    const before = (await listed()).length;
    const many = Array.from({ length: 10_001 }, (_, i) => ({ sha256: i.toString(16).padStart(64, 'a') }));
    for (const entries of [[], many]) {
      const res = await post(entries);
      assert.equal(res.status, 400, res.text.slice(0, 200));
      assert.equal(res.body.error, 'invalid_request');
      assert.match(res.body.message, /^entries\b/);
    }
    assert.equal((await listed()).length, before);
  });

  test('every spelling, against the model: stored once in lowercase, or the request refused whole', async () => {
    // The blocklist as API.md says it must now be: the canonical entries accepted so far.
    const model = new Map<string, Canonical>((await listed()).map((e) => [keyOf(e), e]));
    const stored: Drawn[] = [];
    /** An entry accepted before, each hash re-spelled in some case: a repeat across requests. */
    const again = fc
      .constant(null)
      .chain(() =>
        stored.length === 0 ? validEntry : fc.constantFrom(...stored).chain((d) => respelled(d.reads as Canonical)),
      );
    const request = fc
      .tuple(
        fc.array(fc.oneof({ weight: 4, arbitrary: validEntry }, { weight: 1, arbitrary: again }), {
          minLength: 1,
          maxLength: 6,
        }),
        // Repeats within the request: the same entry, re-spelled.
        fc.array(fc.nat(), { maxLength: 3 }),
        fc.option(fc.tuple(invalidEntry, fc.nat()), { freq: 3 }),
      )
      .chain(([entries, repeats, bad]) => {
        const list = [...entries];
        return fc.tuple(...repeats.map((r) => respelled(list[r % list.length]!.reads as Canonical))).map((rep) => {
          const all = [...list, ...rep];
          if (bad) all.splice(bad[1] % (all.length + 1), 0, bad[0]);
          return all;
        });
      });

    await fc.assert(
      fc.asyncProperty(request, async (drawn) => {
        const res = await post(drawn.map((d) => d.body));
        assert.notEqual(res.status, 500, res.text);
        const invalid = drawn.flatMap((d, i) => ('invalid' in d.reads ? [{ i, why: d.reads.invalid }] : []));
        if (invalid.length) {
          assert.equal(res.status, 400, res.text);
          assert.equal(res.body.error, 'invalid_request');
          const named = /^entries\.(\d+)\b/.exec(res.body.message);
          assert.ok(named, `the message names the entry: ${res.body.message}`);
          const which = invalid.find((v) => v.i === Number(named[1]));
          assert.ok(which, `entry ${named[1]} is one of the invalid ones (${JSON.stringify(invalid)}): ${res.text}`);
          const words = which.why === 'hash' ? /sha256, phash or pdq/ : new RegExp(`\\b${which.why}\\b`);
          assert.match(res.body.message, words);
        } else {
          const fresh = new Map<string, Canonical>();
          for (const d of drawn) {
            const c = d.reads as Canonical;
            if (!model.has(keyOf(c))) fresh.set(keyOf(c), c);
          }
          // The model first: a later run (or a shrink) compares the server with what it holds after this request.
          for (const [k, c] of fresh) model.set(k, c);
          stored.push(...drawn);
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.added, fresh.size, res.text);
          assert.equal(res.body.added + res.body.skipped, drawn.length, res.text);
        }
        const now = await listed();
        const keys = now.map(keyOf);
        assert.equal(new Set(keys).size, keys.length, 'every entry is stored once');
        assert.deepEqual(new Set(keys), new Set(model.keys()));
        // The effect: each SHA-256 of the model is blocked, those of a refused request are not.
        const digests = drawn.flatMap((d) => ('invalid' in d.reads || !d.reads.sha256 ? [] : [d.reads.sha256]));
        if (digests.length) {
          const check = await app.api.post('/api/uploads/check', { sha256: digests }, { token: owner.token });
          assert.equal(check.status, 200, check.text);
          const inModel = new Set([...model.values()].map((c) => c.sha256));
          assert.deepEqual(
            check.body.results.map((r: { status: string }) => r.status),
            digests.map((s) => (inModel.has(s) ? 'blocked' : 'new')),
          );
        }
      }),
      { numRuns: 40 },
    );
  });
});
