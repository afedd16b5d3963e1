/**
 * Tag search by prefix reads a range of the name index (issue 46): its answer, page by page after cursors, is the
 * answer a full scan gives (every listed tag named prefix…, most used first, then by name in code point order), for
 * prefixes met by few tags (read from the name range) and by many (past PREFIX_RANGE_ROWS: the most-used-first
 * index), with names beyond ASCII and beyond U+FFFF. And the end of a prefix's range is exact (fast-check).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { PREFIX_RANGE_ROWS, TagRepository, prefixEnd } from '../../src/store/repositories/tag.repository.ts';
import { withStoreDatabase } from '../support/store-db.ts';

const byCodePoint = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

test('property: a string starts with p exactly when p ≤ it < prefixEnd(p), in code point order', () => {
  const text = fc.string({
    unit: fc.oneof(
      fc.constantFrom('a', 'b', 'z', 'é', '\uffff', '𝔞', '\u{10ffff}'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    ),
    maxLength: 5,
  });
  fc.assert(
    fc.property(text, text, (p, s) => {
      const end = prefixEnd(p);
      const inRange = byCodePoint(s, p) >= 0 && (end === null || byCodePoint(s, end) < 0);
      return inRange === s.startsWith(p);
    }),
    { numRuns: 20_000 },
  );
});

test('prefix search pages as a full scan would, for rare and for common prefixes', async () => {
  await withStoreDatabase('tag-prefix', new Date(), async (db) => {
    // Names over a small alphabet (so prefixes share), some beyond ASCII; more than PREFIX_RANGE_ROWS start with "c"
    // (the dense path), the rest at random.
    const letters = ['a', 'b', 'c', 'é', 'ж', '𝔞'];
    const spell = (i: number): string => (i < 6 ? letters[i]! : spell(Math.floor(i / 6) - 1) + letters[i % 6]!);
    const names = new Set<string>(Array.from({ length: PREFIX_RANGE_ROWS + 300 }, (_, i) => `c${spell(i)}`));
    let seed = 7;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8;
    while (names.size < PREFIX_RANGE_ROWS + 1_800) names.add(spell(next() % 40_000));
    const rows = [...names].map((name, i) => ({
      id: randomUUID(),
      name,
      slug: name,
      upload_count: i % 11 === 0 ? 0 : next() % 40,
      created_at: db.dialect.date(new Date()),
    }));
    for (let i = 0; i < rows.length; i += 500)
      await db
        .db()
        .insertInto('tags')
        .values(rows.slice(i, i + 500))
        .execute();
    const listed = rows.filter((r) => r.upload_count > 0);
    const repo = new TagRepository(db);
    const expected = (prefix: string) =>
      listed
        .filter((r) => r.name.startsWith(prefix))
        .sort((a, b) => b.upload_count - a.upload_count || byCodePoint(a.name, b.name))
        .map((r) => r.name);
    for (const prefix of ['c', 'ca', 'cé', 'ж', '𝔞', '𝔞a', 'é', 'zz', 'bbbbbbb']) {
      const want = expected(prefix);
      const got: string[] = [];
      let after: { uploads: number; id: string } | null = null;
      for (let page = 0; page < 400; page++) {
        const tags = await repo.suggest(prefix, after, 50);
        got.push(...tags.map((t) => t.name));
        if (tags.length < 50) break;
        const last = tags.at(-1)!;
        after = { uploads: last.uploads, id: last.id };
      }
      assert.deepEqual(got, want, `prefix ${prefix} (${want.length} tags)`);
    }
    assert.ok(expected('c').length > PREFIX_RANGE_ROWS, 'the dense path is exercised');
  });
});
