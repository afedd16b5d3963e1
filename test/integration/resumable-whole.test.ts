/**
 * A resumable upload whose whole file arrives in one request (creation-with-upload, or one PATCH from 0) runs the
 * upload use case on the bytes in memory, before anything is stored or acknowledged (ResumableUploads.#writeFirst):
 * on the real database of the profile, with the disk parts store, and a use case that the test scripts. What must
 * hold: nothing is written when it answers; a transient refusal keeps the file as a complete one, which the result
 * resource then runs again; a first chunk, a bad checksum and a body that breaks off behave as any chunk.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser } from '../support/users.ts';
import { ResumableRepository } from '../../src/store/repositories/resumable.repository.ts';
import { FileResumableParts } from '../../src/store/resumable-parts.ts';
import { ResumableUploads } from '../../src/domain/uploads/resumable.ts';
import { errors } from '../../src/domain/errors.ts';
import { systemClock } from '../../src/domain/clock.ts';
import type { CreateUpload } from '../../src/domain/uploads/create-upload.ts';
import type { Principal } from '../../src/domain/users.ts';

let app: TestApp;
let dir: string;
let principal: Principal;

before(async () => {
  app = await startApp();
  dir = await mkdtemp(join(tmpdir(), 'pixvote-resumable-whole-'));
  const user = await registerUser(app.api);
  principal = {
    userId: user.id,
    username: user.username,
    isAdmin: false,
    accountCreatedAt: new Date(0),
    method: 'api_token',
  } as Principal;
});
after(async () => {
  await app.close();
  await rm(dir, { recursive: true, force: true });
});

/** The use case as the test scripts it: each call takes the next answer (an error is thrown). */
function useCase(answers: (number | Error)[]) {
  const seen: { sha256: string; bytes: Buffer }[] = [];
  const fake = {
    async run(_p: Principal, input: { file: { sha256: string; read(): Promise<ArrayBuffer> } }) {
      seen.push({ sha256: input.file.sha256, bytes: Buffer.from(await input.file.read()) });
      const a = answers.shift() ?? 201;
      if (a instanceof Error) throw a;
      return { status: a, body: JSON.stringify({ n: seen.length }), replayed: false, created: null };
    },
  };
  return { createUpload: fake as unknown as CreateUpload, seen };
}

function uploads(answers: (number | Error)[], partsDir = dir) {
  const u = useCase(answers);
  const resumable = new ResumableUploads({
    store: new ResumableRepository(app.composed.db),
    parts: new FileResumableParts(partsDir),
    createUpload: u.createUpload,
    clock: systemClock,
    maxOpen: 100,
    ttlMs: 3600_000,
  });
  return { resumable, seen: u.seen };
}

async function* body(...parts: Buffer[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield p;
}
async function* broken(part: Buffer): AsyncIterable<Uint8Array> {
  yield part;
  throw Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest();
const fields = { description: '', tags: undefined, isPrivate: false, filename: 'f.jpg' };
const stored = async () => (await readdir(join(dir, 'resumable')).catch(() => [] as string[])).sort();

test('the whole file in one request: the use case runs on it in memory, nothing stored, offset = length', async () => {
  const { resumable, seen } = uploads([201]);
  const file = randomBytes(300_000);
  const { row } = await resumable.create(principal, { length: file.length, fields, idempotencyKey: null });
  const offset = await resumable.write(principal, row, 0, body(file.subarray(0, 1000), file.subarray(1000)), sha(file));
  assert.equal(offset, file.length);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.sha256, sha(file).toString('hex'));
  assert.ok(seen[0]!.bytes.equals(file));
  assert.deepEqual(await stored(), [], 'no partial file written');
  const now = await resumable.get(principal, row.id);
  assert.equal(now.status, 'done');
  assert.equal(now.received, file.length);
  assert.deepEqual(await resumable.finish(principal, row.id), { status: 201, body: '{"n":1}' });
  assert.deepEqual(await resumable.result(principal, row.id), { status: 201, body: '{"n":1}' });
});

test('a transient refusal keeps the complete file; the result resource runs the use case again from it', async () => {
  const { resumable, seen } = uploads([errors.busy('the workers are busy'), 201]);
  const file = randomBytes(200_000);
  const { row } = await resumable.create(principal, { length: file.length, fields, idempotencyKey: null });
  await assert.rejects(resumable.write(principal, row, 0, body(file), null), { status: 503 });
  const kept = await resumable.get(principal, row.id);
  assert.equal(kept.status, 'receiving');
  assert.equal(kept.received, file.length, 'the offset says the file is all there');
  assert.deepEqual(await stored(), [row.id]);
  const r = await resumable.result(principal, row.id);
  assert.equal(r.status, 201);
  assert.equal(seen.length, 2);
  assert.ok(seen[1]!.bytes.equals(file), 'run again on the stored bytes');
});

test('a first chunk is stored; a bad checksum stores nothing (460); a broken body keeps what arrived', async () => {
  const { resumable, seen } = uploads([201]);
  const file = randomBytes(100_000);
  const { row } = await resumable.create(principal, { length: file.length, fields, idempotencyKey: null });
  await assert.rejects(resumable.write(principal, row, 0, body(file), sha(randomBytes(8))), { status: 460 });
  assert.equal((await resumable.get(principal, row.id)).received, 0);
  assert.equal(seen.length, 0);
  // Broken with a checksum: nothing kept; without: what arrived.
  assert.equal(await resumable.write(principal, row, 0, broken(file.subarray(0, 5000)), sha(file)), 0);
  assert.equal(await resumable.write(principal, row, 0, broken(file.subarray(0, 5000)), null), 5000);
  const at = await resumable.get(principal, row.id);
  assert.equal(at.received, 5000);
  const rest = await resumable.write(principal, at, 5000, body(file.subarray(5000)), sha(file.subarray(5000)));
  assert.equal(rest, file.length);
  assert.equal(seen.length, 0, 'the use case runs in finish once the parts hold the file');
  assert.deepEqual(await resumable.finish(principal, row.id), { status: 201, body: '{"n":1}' });
  assert.ok(seen[0]!.bytes.equals(file));

  // A first chunk short of the length: stored as any, no use case.
  const other = randomBytes(50_000);
  const second = await resumable.create(principal, { length: other.length, fields, idempotencyKey: null });
  const first = other.subarray(0, 20_000);
  assert.equal(await resumable.write(principal, second.row, 0, body(first), sha(first)), 20_000);
  assert.ok((await stored()).includes(second.row.id));
  assert.equal(seen.length, 1);
});
