/**
 * `pixvote media migrate --to s3|disk` (issue 19, Moving in and out), against the real S3 server: every variant
 * copied and verified by hash while the service serves, a second run resumes after the first and copies only what
 * came since, the service then serves the same bytes from the store, and the way back restores the disk.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startApp, type TestApp } from '../support/app.ts';
import { apiToken, registerUser } from '../support/users.ts';
import { diskState, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';
import { createTestBucket, s3Skip, type TestBucket } from '../support/s3.ts';
import { runMedia } from '../../src/cli/media.command.ts';

const skip = await s3Skip();
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('pixvote media migrate', { skip }, () => {
  let bucket: TestBucket;
  let app: TestApp;
  let token: string;
  let seed = 1970;

  before(async () => {
    bucket = await createTestBucket();
    app = await startApp();
    token = await apiToken(app.api, await registerUser(app.api));
  });
  after(async () => {
    await app?.close();
    await bucket?.drop();
  });

  const upload = async () => {
    const r = await uploadImage(app.api, token, await photoJpeg({ width: 500, height: 400, seed: seed++ }));
    assert.equal(r.status, 201, r.text);
    return r.body.id as string;
  };
  const migrate = async (to: 's3' | 'disk') => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    const env = {
      DATA_DIR: app.config.dataDir,
      ...(app.config.databaseUrl ? { DATABASE_URL: app.config.databaseUrl } : {}),
      ...bucket.env(undefined, 'media'),
    };
    const code = await runMedia(['migrate', '--to', to, '--batch', '2'], out, env);
    return { code, text };
  };

  test('to s3 and back: copied, verified, resumed, served alike', async () => {
    const ids = [await upload(), await upload(), await upload()];
    const served = new Map<string, string>();
    for (const id of ids) served.set(id, sha((await app.api.get(`/api/image/${id}`)).bytes));

    const first = await migrate('s3');
    assert.equal(first.code, 0, first.text);
    assert.match(first.text, /done: 3 uploads, 9 variants copied and verified by sha256/);
    assert.equal((await bucket.keys()).length, 9);

    // While the service serves from disk: a new upload; the next run resumes after the first and copies it only.
    ids.push(await upload());
    const second = await migrate('s3');
    assert.match(second.text, /resuming after/);
    assert.match(second.text, /done: 1 uploads, 3 variants copied/);

    // The service pointed at the store serves the very bytes it served from disk.
    const onS3 = await startApp(
      bucket.env(undefined, 'media'),
      app.config.databaseUrl ? { databaseUrl: app.config.databaseUrl } : { sharedDataDir: app.config.dataDir },
    );
    try {
      for (const id of ids.slice(0, 3))
        assert.equal(sha((await onS3.api.get(`/api/image/${id}`)).bytes), served.get(id));
    } finally {
      await onS3.close();
    }

    // The way back: the disk copies gone, migrate --to disk restores them from the store, verified.
    const before = (await diskState(app)).media.sort();
    const hashes = new Map<string, string>();
    for (const f of before) hashes.set(f, sha(await readFile(f)));
    await rm(join(app.config.dataDir, 'media'), { recursive: true, force: true });
    const back = await migrate('disk');
    assert.equal(back.code, 0, back.text);
    assert.match(back.text, /done: 4 uploads, 12 variants copied and verified by sha256/);
    const after = (await diskState(app)).media.sort();
    assert.deepEqual(after, before);
    for (const f of after) assert.equal(sha(await readFile(f)), hashes.get(f));
    assert.equal((await app.api.get(`/api/image/${ids[0]}`)).status, 200);
  });
});
