/**
 * Seeding straight into the database, writing what the app writes (upload.repository.ts `insert`,
 * tag-links.ts, vote.repository.ts counters and ranks, the sqlite-vec row on SQLite), but as multi-row
 * inserts inside large transactions: 1M uploads in about a minute instead of hours through HTTP.
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/store/database.ts';
import { uploadChunkColumns } from '../../src/store/similarity/hamming.ts';
import { hotRank, wilsonLowerBound } from '../../src/domain/ranking.ts';
import { seededRandom } from '../../test/support/fixtures.ts';
import { flipBits as flipAnyBits, hex8 } from '../../test/support/hashes.ts';

/** Random PDQ hashes, and one with `bits` bits flipped (the tests' own). */
export { flipPdqBits as flipPdq, randomPdq } from '../../test/support/hashes.ts';
import { analyze, insertRows, withIndexesDeferred } from './bulk-insert.ts';

export type Rng = () => number;

/** Seeded and reproducible: the same generator the test fixtures use. */
export const rng = (seed: number): Rng => seededRandom(seed);

/** A random 64-bit hash as a pHash has it: the top bit (the DC coefficient) always 0. */
export const randomHash = (r: Rng): string => hex8(Math.floor(r() * 2 ** 31)) + hex8(Math.floor(r() * 2 ** 32));

/** `hash` with `bits` distinct bits flipped (never the top bit, which a pHash never sets). */
export const flipBits = (hash: string, bits: number, r: Rng): string => flipAnyBits(hash, bits, r, 63);

export interface SeededUser {
  id: string;
  username: string;
}

export async function seedUsers(db: Database, count: number, from = 0): Promise<SeededUser[]> {
  const d = db.dialect;
  const users = Array.from({ length: count }, (_, i) => ({ id: randomUUID(), username: `bench_user_${from + i}` }));
  await insertRows(
    db,
    'users',
    users.map((u) => ({
      id: u.id,
      username: u.username,
      username_key: u.username,
      email: `${u.username}@example.com`,
      email_key: `${u.username}@example.com`,
      // Never used to log in: benchmarks mint JWTs for seeded users.
      password_hash: 'scrypt$bench$not-a-password',
      role: 'user',
      created_at: d.date(new Date(Date.UTC(2026, 0, 1))),
    })),
  );
  return users;
}

export interface UploadSeed {
  count: number;
  users: readonly SeededUser[];
  r: Rng;
  /** Perceptual hash of the i-th upload (default random). */
  phash?: (i: number) => string;
  /** Votes spread over these uploads, by users of `users`; each (user, upload) at most once. */
  votes?: number;
  /** Tags to create and link, 0–3 per upload. */
  tags?: number;
  /** Who uploads (default `users`, who also vote): repeat a user to make a heavy uploader. */
  owners?: readonly SeededUser[];
  /** Existing tags to link instead of creating `tags` (their counts are left as they are). */
  tagIds?: readonly string[];
  /** How strongly links favour the first tags: tag index = ⌊tags × r^skew⌋ (default 2). */
  tagSkew?: number;
  privateShare?: number;
  /** Newest upload's time; the others go back one minute each. */
  newest?: Date;
}

/** Inserts uploads (with their tags, votes and similarity rows) and returns their ids, oldest first. */
export async function seedUploads(db: Database, s: UploadSeed): Promise<string[]> {
  const d = db.dialect;
  const { r } = s;
  const newest = (s.newest ?? new Date()).getTime();
  const ids = Array.from({ length: s.count }, () => randomUUID());
  const up = new Uint32Array(s.count);
  const down = new Uint32Array(s.count);
  const votes: Array<Record<string, unknown>> = [];
  const seen = new Set<number>();
  const wanted = Math.min(s.votes ?? 0, s.count * s.users.length);
  while (votes.length < wanted) {
    // Skewed towards recent uploads, as real traffic is.
    const i = s.count - 1 - Math.floor(s.count * r() ** 2);
    const u = Math.floor(r() * s.users.length);
    if (seen.has(u * s.count + i)) continue;
    seen.add(u * s.count + i);
    const value = r() < 0.6 ? 1 : -1;
    if (value > 0) up[i]!++;
    else down[i]!++;
    const at = d.date(new Date(newest - (s.count - i) * 60_000 + 1000));
    votes.push({ user_id: s.users[u]!.id, upload_id: ids[i], value, created_at: at, updated_at: at });
  }

  const tagIds = s.tagIds ?? Array.from({ length: s.tags ?? 0 }, () => randomUUID());
  const links: Array<Record<string, unknown>> = [];
  const tagCount = new Uint32Array(tagIds.length);
  const rows = ids.map((id, i) => {
    const createdAt = new Date(newest - (s.count - 1 - i) * 60_000);
    const phash = s.phash ? s.phash(i) : randomHash(r);
    const mediaKey = randomUUID();
    const score = up[i]! - down[i]!;
    const picked = tagIds.length
      ? new Set(Array.from({ length: Math.floor(r() * 4) }, () => Math.floor(tagIds.length * r() ** (s.tagSkew ?? 2))))
      : new Set<number>();
    const ranks = { score, hot_rank: hotRank(score, createdAt), best_rank: wilsonLowerBound(up[i]!, down[i]!) };
    // A link carries its upload's listing keys, as the service keeps them (m013-keyset-listings), and whether
    // listings show it (m025; set below, once the row says).
    const firstLink = links.length;
    for (const t of picked) {
      const at = d.date(createdAt);
      links.push({ upload_id: id, tag_id: tagIds[t], created_at: at, upload_created_at: at, ...ranks });
    }
    const row = {
      id,
      user_id: (s.owners ?? s.users)[Math.floor(r() * (s.owners ?? s.users).length)]!.id,
      upload_type: 'image',
      filename: `${mediaKey}.webp`,
      original_name: `IMG_${1000 + (i % 9000)}.jpg`,
      description: r() < 0.5 ? '' : `benchmark upload ${i}: a photo-like scene`,
      external_url: null,
      source_url: null,
      upvotes: up[i],
      downvote_count: down[i],
      ...ranks,
      is_private: d.bool(r() < (s.privateShare ?? 0.05)),
      created_at: d.date(createdAt),
      sha256: randomUUID().replace(/-/g, '') + randomUUID().replace(/-/g, ''),
      phash,
      ...uploadChunkColumns(phash),
      media_key: mediaKey,
      width: 1600,
      height: 1200,
      animated: d.bool(false),
      original_format: 'jpeg',
      thumbhash: 'HBkSHYSIeHiPiHh8eJd4eTN0EEQG',
      human_score: Math.round(r() * 100) / 1000,
      variants: JSON.stringify({
        thumb: { width: 320, height: 240, bytes: 14_000 },
        medium: { width: 1024, height: 768, bytes: 98_000 },
        full: { width: 1600, height: 1200, bytes: 201_000 },
      }),
    };
    // A tag counts the uploads listings show (public ones), as the service keeps it.
    if (!d.readBool(row.is_private)) for (const t of picked) tagCount[t]!++;
    for (let k = firstLink; k < links.length; k++) links[k]!.listed = d.bool(!d.readBool(row.is_private));
    return row;
  });

  const at = d.date(new Date(newest - s.count * 60_000));
  await insertRows(
    db,
    'tags',
    (s.tagIds ? [] : tagIds).map((id, t) => ({
      id,
      name: `tag ${t}`,
      slug: `tag-${t}`,
      upload_count: tagCount[t],
      created_at: at,
    })),
  );
  await insertRows(db, 'uploads', rows);
  await insertRows(db, 'upload_tags', links);
  await insertRows(db, 'votes', votes);
  if (d.name === 'sqlite') {
    await insertRows(
      db,
      'upload_phash_vec',
      rows.map((u) => ({ upload_id: u.id, hash: Buffer.from(u.phash, 'hex') })),
      { hash: 'vec_bit(?)' },
    );
  }
  return ids;
}

/** Random pHash-like hashes; 2 % are edits (1–6 bits away) of an earlier one, as re-uploads are. */
export function hashAt(hashes: readonly string[], i: number, r: Rng): string {
  if (i > 100 && r() < 0.02) return flipBits(hashes[Math.floor(r() * i)]!, 1 + Math.floor(r() * 6), r);
  return randomHash(r);
}

const SEED_CHUNK = 100_000;

/**
 * Grows the uploads table to `size` rows (lookup.bench, blocklist.bench): `hashes` (the perceptual hashes of the
 * rows already seeded, in order) is extended with hashAt, the new rows are inserted a chunk at a time, one minute
 * apart up to 2026-01-01 + size minutes, with the secondary indexes rebuilt once after a big load, then statistics
 * and (PostgreSQL) the visibility map, as autovacuum keeps them on a live database. Returns the new rows' ids.
 */
export async function growUploads(
  db: Database,
  opts: { size: number; hashes: string[]; users: readonly SeededUser[]; r: Rng },
): Promise<{ ids: string[]; seconds: number }> {
  const { size, hashes, users, r } = opts;
  const started = performance.now();
  const from = hashes.length;
  while (hashes.length < size) hashes.push(hashAt(hashes, hashes.length, r));
  const ids: string[] = [];
  const load = async () => {
    for (let at = from; at < size; at += SEED_CHUNK) {
      const count = Math.min(SEED_CHUNK, size - at);
      const added = await seedUploads(db, {
        count,
        users,
        r,
        phash: (i) => hashes[at + i]!,
        newest: new Date(Date.UTC(2026, 0, 1) + (at + count) * 60_000),
      });
      ids.push(...added);
    }
  };
  await (size - from >= SEED_CHUNK ? withIndexesDeferred(db, ['uploads'], load) : load());
  if (db.dialect.name === 'postgres') await analyze(db);
  return { ids, seconds: (performance.now() - started) / 1000 };
}

/** A stored upload's perceptual hash: the first after a random id (ids are random, so any row may come). */
export async function someStoredHash(db: Database): Promise<string | null> {
  const row = await db
    .db()
    .selectFrom('uploads')
    .select('phash')
    .where('id', '>', randomUUID())
    .where('phash', 'is not', null)
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.phash ?? null;
}
