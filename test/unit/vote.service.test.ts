/** The vote service over in-memory ports: casting, moving and retracting a vote, and who may vote on what. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/domain/errors.ts';
import { VoteService } from '../../src/domain/votes/vote.service.ts';
import type { Principal } from '../../src/domain/users.ts';
import { MemoryUploads, MemoryVotes, testPrincipal } from '../support/memory-ports.ts';

const NOW = new Date('2026-11-25T12:00:00Z');
const alice = testPrincipal('alice');
const bob = testPrincipal('bob');
const admin = testPrincipal('root', { isAdmin: true });

function setup(minAccountAgeSeconds = 0) {
  const uploads = new MemoryUploads();
  const votes = new MemoryVotes(uploads);
  let changes = 0;
  const service = new VoteService({
    votes,
    clock: { now: () => NOW },
    onChanged: async () => void changes++,
    minAccountAgeSeconds,
  });
  const upload = uploads.add({ userId: alice.userId });
  return { uploads, votes, service, upload, changes: () => changes };
}

const refused = (code: string) => (e: unknown) => e instanceof AppError && e.code === code;

describe('VoteService', () => {
  test('a vote counts once; the same vote again is a no-op that changes nothing', async () => {
    const { service, upload, changes } = setup();
    assert.deepEqual(await service.vote(bob, upload.id, 'fucks'), {
      uploadId: upload.id,
      vote: 'fucks',
      upvotes: 1,
      downvote_count: 0,
    });
    assert.equal(changes(), 1);
    assert.deepEqual(await service.vote(bob, upload.id, 'fucks'), {
      uploadId: upload.id,
      vote: 'fucks',
      upvotes: 1,
      downvote_count: 0,
    });
    assert.equal(changes(), 1, 'no change, no invalidation');
    assert.equal(await service.myVote(upload.id, bob.userId), 'fucks');
  });

  test('voting the other way moves the vote; none retracts it; the counts are the upload’s', async () => {
    const { service, upload, changes } = setup();
    await service.vote(alice, upload.id, 'does_not_fuck');
    const moved = await service.vote(bob, upload.id, 'fucks');
    assert.deepEqual([moved.upvotes, moved.downvote_count], [1, 1]);
    const switched = await service.vote(bob, upload.id, 'does_not_fuck');
    assert.deepEqual(switched, { uploadId: upload.id, vote: 'does_not_fuck', upvotes: 0, downvote_count: 2 });
    const retracted = await service.vote(bob, upload.id, 'none');
    assert.deepEqual(retracted, { uploadId: upload.id, vote: null, upvotes: 0, downvote_count: 1 });
    assert.equal(await service.myVote(upload.id, bob.userId), null);
    assert.equal(changes(), 4);
    const again = await service.vote(bob, upload.id, 'none');
    assert.equal(again.vote, null);
    assert.equal(changes(), 4, 'retracting no vote changes nothing');
  });

  test('an owner may vote on their own upload, a private one included', async () => {
    const { service, uploads } = setup();
    const own = uploads.add({ userId: alice.userId, isPrivate: true });
    assert.equal((await service.vote(alice, own.id, 'fucks')).upvotes, 1);
  });

  test('an id that is not a UUID is a malformed field; an unknown upload is not found', async () => {
    const { service } = setup();
    await assert.rejects(service.vote(bob, 'not-a-uuid', 'fucks'), refused('invalid_request'));
    await assert.rejects(service.vote(bob, '00000000-0000-4000-8000-000000000000', 'fucks'), refused('not_found'));
  });

  test('a held upload takes votes from its owner and admins only; others find nothing there', async () => {
    const { service, uploads, votes } = setup();
    const held = uploads.add({ userId: alice.userId, moderation: 'held' });
    await assert.rejects(service.vote(bob, held.id, 'fucks'), refused('not_found'));
    assert.equal(held.upvotes, 0, 'nothing was written');
    assert.equal(votes.values.size, 0);
    assert.equal((await service.vote(alice, held.id, 'fucks')).upvotes, 1);
    assert.equal((await service.vote(admin, held.id, 'fucks')).upvotes, 2);
  });

  test('a removed upload takes no votes, not even from an admin', async () => {
    const { service, uploads, changes } = setup();
    const removed = uploads.add({ userId: alice.userId, moderation: 'removed' });
    for (const who of [alice, bob, admin]) {
      await assert.rejects(service.vote(who, removed.id, 'fucks'), refused('removed'));
      await assert.rejects(service.vote(who, removed.id, 'none'), refused('removed'));
    }
    assert.equal(removed.upvotes, 0);
    assert.equal(changes(), 0);
  });

  test('VOTE_MIN_ACCOUNT_AGE refuses a younger account’s vote but lets it take a vote back', async () => {
    const { service, upload, votes } = setup(24 * 3600);
    const young: Principal = testPrincipal('young', { accountCreatedAt: new Date(NOW.getTime() - 3600_000) });
    const oldEnough = testPrincipal('day', { accountCreatedAt: new Date(NOW.getTime() - 24 * 3600_000) });
    await assert.rejects(service.vote(young, upload.id, 'fucks'), (e: unknown) => {
      assert.ok(refused('account_too_new')(e));
      assert.match(
        (e as Error).message,
        /younger than 1d cannot vote \(VOTE_MIN_ACCOUNT_AGE\).*2026-11-26T11:00:00\.000Z/,
      );
      return true;
    });
    await assert.rejects(service.vote(young, upload.id, 'does_not_fuck'), refused('account_too_new'));
    assert.equal(votes.values.size, 0);
    // A vote the account has (cast before the rule was set) may still be retracted.
    votes.values.set(`${young.userId} ${upload.id}`, 1);
    upload.upvotes = 1;
    assert.deepEqual(await service.vote(young, upload.id, 'none'), {
      uploadId: upload.id,
      vote: null,
      upvotes: 0,
      downvote_count: 0,
    });
    assert.equal((await service.vote(oldEnough, upload.id, 'fucks')).upvotes, 1, 'exactly the minimum age may vote');
  });

  test('without the rule a brand-new account votes', async () => {
    const { service, upload } = setup(0);
    const fresh = testPrincipal('fresh', { accountCreatedAt: NOW });
    assert.equal((await service.vote(fresh, upload.id, 'fucks')).vote, 'fucks');
  });
});
