/**
 * The piece of resumable uploads across gateways that needs no server: the Redis lock falling back to the database
 * lease when Redis does not answer. (The bytes in the bucket: test/http/resumable-store.test.ts, on the S3 server.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { redisResumableLocks } from '../../src/store/resumable-locks.ts';
import type { ResumableLocks } from '../../src/domain/uploads/resumable.ts';

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
