import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/database.ts';
import {
  BLOCKLIST_CHUNKS,
  UPLOAD_CHUNKS,
  candidateCount,
  chunksOf,
  hammingHex,
  neighbourhoodSize,
  neighbours,
  popcount32,
  uploadChunkColumns,
} from '../../src/store/similarity/hamming.ts';
import { MAX_CHUNK_PROBES, similarityIndexFor } from '../../src/store/similarity/similarity-index.ts';
import { createTestDatabase } from '../support/pg.ts';
import { onPostgres } from '../support/env.ts';
import { flipBits, hex8, lcgRandom } from '../support/hashes.ts';

test(
  'near-duplicate lookup is exact: every method agrees with brute force, visibility respected, up to distance 14 ' +
    'through the chunk indexes and at 20 by a scan (past MAX_CHUNK_PROBES)',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pixvote-sim-'));
    const pg = onPostgres ? await createTestDatabase() : null;
    const db = await openDatabase({ databaseUrl: pg?.url ?? null, sqlitePath: join(dir, 'app.db') });
    try {
      const d = db.dialect;
      const owner = randomUUID();
      const other = randomUUID();
      for (const id of [owner, other]) {
        await db
          .db()
          .insertInto('users')
          .values({
            id,
            username: id.slice(0, 8),
            username_key: id.slice(0, 8),
            email: `${id}@x.test`,
            email_key: `${id}@x.test`,
            password_hash: 'x',
            role: 'user',
            created_at: d.date(new Date()),
          })
          .execute();
      }
      // On PostgreSQL both ways the lookup is sent: in Kysely's statements, and prepared (what the app runs).
      const methods =
        d.name === 'postgres'
          ? (['multi-index-hashing', 'multi-index-hashing (prepared)'] as const)
          : (['multi-index-hashing', 'sqlite-vec'] as const);
      const indexes = methods.map((m) =>
        m === 'multi-index-hashing (prepared)'
          ? similarityIndexFor(d, 'multi-index-hashing', db.prepared)
          : similarityIndexFor(d, m),
      );
      const r = lcgRandom(7);
      const rows: Array<{ id: string; phash: string; userId: string; isPrivate: boolean; at: number }> = [];
      const bases = Array.from(
        { length: 200 },
        // Any 64 bits: a hash with its top bit set must be found as well (hashes made elsewhere may set it).
        () => hex8(Math.floor(r() * 2 ** 32)) + hex8(Math.floor(r() * 2 ** 32)),
      );
      for (let i = 0; i < 400; i++) {
        const phash = i < 200 ? bases[i]! : flipBits(bases[i % 200]!, 1 + (i % 8), r);
        rows.push({
          id: randomUUID(),
          phash,
          userId: i % 3 ? owner : other,
          isPrivate: i % 5 === 0,
          at: 1_700_000_000_000 + i * 1000,
        });
      }
      for (const row of rows) {
        await db
          .db()
          .insertInto('uploads')
          .values({
            id: row.id,
            user_id: row.userId,
            upload_type: 'image',
            description: '',
            is_private: d.bool(row.isPrivate),
            created_at: d.date(new Date(row.at)),
            phash: row.phash,
            ...uploadChunkColumns(row.phash),
          })
          .execute();
        await indexes[0]!.add(db.db(), row.id, row.phash);
      }
      for (const [qi, probe] of [
        ...bases.slice(0, 40),
        ...bases.slice(0, 20).map((b) => flipBits(b, 3, r)),
      ].entries()) {
        // Distance 14 (24 203 chunk values per lookup) on a few probes only: each statement is ~170 kB of SQL.
        for (const maxDistance of qi < 6 ? [0, 4, 8, 14, 20] : [0, 4, 8, 20]) {
          for (const viewer of [
            { userId: other, isAdmin: false },
            { userId: owner, isAdmin: false },
            { userId: randomUUID(), isAdmin: true },
          ]) {
            const visible = rows.filter((x) => !x.isPrivate || x.userId === viewer.userId || viewer.isAdmin);
            const best = visible
              .map((x) => ({ id: x.id, distance: hammingHex(x.phash, probe), at: x.at }))
              .filter((x) => x.distance <= maxDistance)
              .sort((a, b) => a.distance - b.distance || a.at - b.at)[0];
            for (const [mi, index] of indexes.entries()) {
              const found = await index.findNear(db.db(), probe, maxDistance, viewer);
              assert.deepEqual(
                found,
                best ? { id: best.id, distance: best.distance } : null,
                `${methods[mi]} probe ${qi} d≤${maxDistance}`,
              );
            }
          }
        }
      }
    } finally {
      await db.close();
      await pg?.drop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);

test('hammingHex counts differing bits of two 64-bit hashes', () => {
  assert.equal(hammingHex('0000000000000000', 'ffffffffffffffff'), 64);
  assert.equal(hammingHex('8000000000000001', '0000000000000000'), 2);
  assert.equal(hammingHex('0123456789abcdef', '0123456789abcdef'), 0);
});

test('chunk layouts: uploads split a hash 22/21/21, the blocklist 16×4; neighbourhoods and their sizes agree', () => {
  assert.deepEqual(chunksOf('0123456789abcdef', UPLOAD_CHUNKS), [0x48d1, 0xb3c4d, 0xbcdef]);
  assert.deepEqual(chunksOf('0123456789abcdef'), [0x0123, 0x4567, 0x89ab, 0xcdef]);
  assert.equal(candidateCount(4, UPLOAD_CHUNKS), 23 + 22 + 1);
  assert.equal(candidateCount(8, BLOCKLIST_CHUNKS), 137 + 3 * 17);
  assert.ok(candidateCount(14, UPLOAD_CHUNKS) <= MAX_CHUNK_PROBES, 'distance 14 is answered by the chunk indexes');
  assert.ok(candidateCount(20, UPLOAD_CHUNKS) > MAX_CHUNK_PROBES, 'distance 20 is answered by a scan');
  assert.ok(candidateCount(16, BLOCKLIST_CHUNKS) <= MAX_CHUNK_PROBES, 'the blocklist never scans');
  for (const [radius, bits] of [
    [0, 22],
    [1, 21],
    [2, 22],
    [3, 16],
  ] as const) {
    const values = neighbours(5, radius, bits);
    assert.equal(values.length, neighbourhoodSize(radius, bits));
    assert.equal(new Set(values).size, values.length);
    assert.ok(values.every((v) => v >= 0 && v < 2 ** bits && popcount32((v ^ 5) >>> 0) <= radius));
  }
});
