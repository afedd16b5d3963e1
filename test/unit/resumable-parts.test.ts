/**
 * The pieces of resumable uploads across gateways that need no server: how the bytes of an upload are found again
 * among its parts in the bucket (chainOf: whatever PATCHes were cut, repeated in other sizes, or written without
 * their offset being recorded), and the Redis lock falling back to the database lease when Redis does not answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { chainOf, type Part } from '../../src/store/s3-resumable-parts.ts';
import { redisResumableLocks } from '../../src/store/resumable-locks.ts';
import type { ResumableLocks } from '../../src/domain/uploads/resumable.ts';

const part = (start: number, end: number): Part => ({ key: `${start}-${end}`, start, end });

test('chainOf: the acknowledged parts cover the file end to end, whatever else lies beside them', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5000 }),
      fc.array(fc.integer({ min: 1, max: 4999 }), { maxLength: 30 }),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 6000 }), fc.integer({ min: 0, max: 6000 })), { maxLength: 20 }),
      (length, cuts, strays) => {
        // The acknowledged PATCHes split [0, length); strays are parts never acknowledged (any start and end).
        const bounds = [...new Set([0, ...cuts.filter((c) => c < length), length])].sort((x, y) => x - y);
        const acknowledged = bounds.slice(1).map((end, i) => part(bounds[i]!, end));
        const parts = [...strays.map(([s, e]) => part(s, e)), ...acknowledged];
        const chain = chainOf(parts, length);
        assert.ok(chain, 'a chain is found');
        let at = 0;
        for (const p of chain) {
          assert.equal(p.start, at);
          assert.ok(p.end > p.start && p.end <= length);
          at = p.end;
        }
        assert.equal(at, length);
      },
    ),
  );
});

test('chainOf: a gap (a part not listed yet) is no chain; thousands of parts are no stack overflow', () => {
  assert.equal(chainOf([part(0, 10), part(20, 30)], 30), null);
  assert.equal(chainOf([part(0, 10), part(10, 40)], 30), null, 'a part past the length is not the file');
  assert.equal(chainOf([], 1), null);
  const many = Array.from({ length: 100_000 }, (_, i) => part(i, i + 1));
  assert.equal(chainOf(many, 100_000)?.length, 100_000);
  // A longer part that leads nowhere is passed over for a shorter one that reaches the end.
  assert.deepEqual(
    chainOf([part(0, 8), part(0, 5), part(5, 10)], 10)?.map((p) => p.key),
    ['0-5', '5-10'],
  );
});

test('the Redis lock falls back to the database lease when Redis does not answer', async () => {
  const down = new Redis('redis://127.0.0.1:1', {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  down.on('error', () => {});
  const asked: string[] = [];
  const fallback: ResumableLocks = {
    acquire: (id) => {
      asked.push(id);
      return Promise.resolve({ renew: () => Promise.resolve(), release: () => Promise.resolve() });
    },
  };
  try {
    const lock = await redisResumableLocks(down, 'p:', fallback).acquire('upload-1', 30_000);
    assert.ok(lock, 'the database lease was taken');
    assert.deepEqual(asked, ['upload-1']);
  } finally {
    down.disconnect();
  }
});
