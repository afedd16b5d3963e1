import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerProcess } from '../support/process.ts';
import { clusterSkip, startCluster } from '../support/cluster.ts';
import { registerUser, type TestUser } from '../support/users.ts';
import { uploadFields, uploadImage } from '../support/uploads.ts';
import { photoJpeg } from '../support/fixtures.ts';

const skip = clusterSkip;
let servers: ServerProcess[] = [];
let cleanup: () => Promise<void> = async () => {};

before(async () => {
  if (skip) return;
  // Three gateways on three ports, started at once (they race for the migration lock).
  const cluster = await startCluster('scale', {
    RATE_LIMIT_AUTH: '1000/15m',
    RATE_LIMIT_VOTE: '3/1h',
    RATE_LIMIT_UPLOAD: '1000/1h',
  });
  servers = cluster.servers;
  cleanup = cluster.stop;
});
after(() => cleanup());

test('three processes on different ports behave as one service', { skip }, async () => {
  const [a, b, c] = servers as [ServerProcess, ServerProcess, ServerProcess];
  assert.equal(new Set(servers.map((s) => s.url)).size, 3);

  // Users registered through any process (each registration hashes with the production scrypt cost).
  const users: TestUser[] = await Promise.all(Array.from({ length: 18 }, (_, i) => registerUser(servers[i % 3]!.api)));
  const owner = users[0]!;

  // Rate limits are global: a user's 3 votes an hour, spent across A, B and C; the 4th refused anywhere.
  const target = await uploadFields(a.api, owner.token, {
    upload_type: 'link',
    external_url: 'https://example.com/limit',
  });
  const probe = await registerUser(b.api);
  const v = (s: ServerProcess, value: string) =>
    s.api.post('/api/vote', { uploadId: target.body.id, vote: value }, { token: probe.token });
  assert.deepEqual(
    [(await v(a, 'fucks')).status, (await v(b, 'none')).status, (await v(c, 'fucks')).status],
    [200, 200, 200],
  );
  for (const s of [a, b, c]) assert.equal((await v(s, 'none')).status, 429);

  // A duplicate uploaded through B of an image accepted by A is detected; the media dir is shared.
  const jpeg = await photoJpeg({ seed: 1201 });
  const first = await uploadImage(a.api, owner.token, jpeg);
  assert.equal(first.status, 201, first.text);
  const dup = await uploadImage(b.api, users[1]!.token, jpeg);
  assert.equal(dup.status, 200);
  assert.equal(dup.body.existingUploadId, first.body.id);
  const img = await c.api.get(`/api/image/${first.body.id}?size=thumb`);
  assert.equal(img.status, 200, 'a file written by A is served by C');
  assert.ok(img.bytes.length > 0);

  // Feed caches are invalidated everywhere: cache pages on B and C, write on A, read again.
  const feed = (s: ServerProcess) => s.api.get('/api/uploads');
  assert.equal((await feed(b)).body.uploads[0].id, first.body.id);
  assert.equal((await feed(c)).body.uploads[0].id, first.body.id);
  const link = await uploadFields(a.api, owner.token, {
    upload_type: 'link',
    external_url: 'https://example.com/scale',
  });
  assert.equal((await feed(b)).body.uploads[0].id, link.body.id);
  assert.equal((await feed(c)).body.uploads[0].id, link.body.id);

  // Vote counts are exact with voters spread over the three processes.
  const votes = await Promise.all(
    users.map((u, i) =>
      servers[i % 3]!.api.post(
        '/api/vote',
        { uploadId: link.body.id, vote: i % 3 === 0 ? 'does_not_fuck' : 'fucks' },
        { token: u.token },
      ),
    ),
  );
  assert.deepEqual([...new Set(votes.map((v) => v.status))], [200]);
  const view = await c.api.get(`/api/upload/${link.body.id}`);
  assert.equal(view.body.upvotes, 12);
  assert.equal(view.body.downvote_count, 6);
  assert.equal((await feed(b)).body.uploads[0].upvotes, 12, 'the votes reached B’s cached feed too');
});
