/** The tag service over in-memory ports: normalisation, the per-upload limit, who may edit, and suggestions. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/domain/errors.ts';
import { TagService } from '../../src/domain/tag.service.ts';
import { MAX_TAGS_PER_UPLOAD } from '../../src/domain/tags.ts';
import { MemoryTags, MemoryUploads, testPrincipal } from '../support/memory-ports.ts';

const alice = testPrincipal('alice');
const bob = testPrincipal('bob');
const admin = testPrincipal('root', { isAdmin: true });

function setup() {
  const uploads = new MemoryUploads();
  const tags = new MemoryTags(uploads);
  let changes = 0;
  const service = new TagService({
    tags,
    clock: { now: () => new Date('2026-11-25T12:00:00Z') },
    onChanged: async () => void changes++,
  });
  const upload = uploads.add({ userId: alice.userId });
  return { uploads, tags, service, upload, changes: () => changes };
}

const refused = (code: string, message?: RegExp) => (e: unknown) =>
  e instanceof AppError && e.code === code && (!message || message.test(e.message));
const names = (list: Array<{ name: string }>) => list.map((t) => t.name);

describe('TagService.add', () => {
  test('names: NFKC-folded, trimmed, lowercased, spaces collapsed, one per slug; slugs dash the spaces', async () => {
    const { service, upload, changes } = setup();
    const added = await service.add(alice, upload.id, [
      '  Cute   Cats ',
      'ＣＡＴＳ',
      'cute cats',
      'cute\tcats',
      'dogs',
    ]);
    assert.deepEqual(
      added.map((t) => [t.name, t.slug]),
      [
        ['cute cats', 'cute-cats'],
        ['cats', 'cats'],
        ['dogs', 'dogs'],
      ],
    );
    assert.equal(changes(), 1);
    const again = await service.add(alice, upload.id, ['CATS', 'birds']);
    assert.deepEqual(names(again), ['cute cats', 'cats', 'dogs', 'birds'], 'a tag it has is not added twice');
  });

  test('an invalid name refuses the whole request, naming it; nothing is added', async () => {
    const { service, upload, changes } = setup();
    const cases: Array<[string, RegExp]> = [
      ['   ', /must not be empty/],
      ['x'.repeat(33), /is 33 characters; the limit is 32/],
      ['cats!', /may only contain letters \(with their marks\), digits/],
      ['ca\u200bts', /invisible character \(U\+200B\)/],
    ];
    for (const [bad, message] of cases) {
      await assert.rejects(service.add(alice, upload.id, ['fine', bad]), refused('invalid_tag', message), bad);
    }
    assert.deepEqual(upload.tags, []);
    assert.equal(changes(), 0);
    assert.deepEqual(names(await service.add(alice, upload.id, ['x'.repeat(32)])), ['x'.repeat(32)]);
  });

  test(`an upload carries at most ${MAX_TAGS_PER_UPLOAD} tags: a request that would pass it adds none`, async () => {
    const { service, upload, changes } = setup();
    const nine = Array.from({ length: MAX_TAGS_PER_UPLOAD - 1 }, (_, i) => `tag ${i}`);
    await service.add(alice, upload.id, nine);
    await assert.rejects(
      service.add(alice, upload.id, ['one', 'two', 'tag 0']),
      refused('too_many_tags', /would have 11 tags; the limit is 10; nothing was added/),
    );
    assert.equal(upload.tags.length, MAX_TAGS_PER_UPLOAD - 1);
    assert.equal(changes(), 1);
    assert.equal((await service.add(alice, upload.id, ['one', 'tag 0'])).length, MAX_TAGS_PER_UPLOAD);
  });

  test('only the owner or an admin edits; a held upload is not there for others, a removed one is gone', async () => {
    const { service, uploads, upload } = setup();
    await assert.rejects(service.add(bob, upload.id, ['cats']), refused('forbidden'));
    assert.deepEqual(names(await service.add(admin, upload.id, ['cats'])), ['cats']);
    const held = uploads.add({ userId: alice.userId, moderation: 'held' });
    await assert.rejects(service.add(bob, held.id, ['cats']), refused('not_found'));
    assert.deepEqual(names(await service.add(alice, held.id, ['cats'])), ['cats']);
    const removed = uploads.add({ userId: alice.userId, moderation: 'removed' });
    await assert.rejects(service.add(alice, removed.id, ['cats']), refused('removed'));
    await assert.rejects(service.add(alice, 'not-a-uuid', ['cats']), refused('not_found'));
    await assert.rejects(service.add(alice, '00000000-0000-4000-8000-000000000000', ['cats']), refused('not_found'));
  });
});

describe('TagService.list, remove, suggest', () => {
  test('anyone reads the tags of a visible upload; a held one only its owner and admins', async () => {
    const { service, uploads, upload } = setup();
    await service.add(alice, upload.id, ['cats']);
    assert.deepEqual(names(await service.list(null, upload.id)), ['cats']);
    const held = uploads.add({ userId: alice.userId, moderation: 'held' });
    await assert.rejects(service.list(null, held.id), refused('not_found'));
    await assert.rejects(service.list(bob, held.id), refused('not_found'));
    assert.deepEqual(await service.list(alice, held.id), []);
    assert.deepEqual(await service.list(admin, held.id), []);
  });

  test('remove takes a slug or a name, answers what is left; an unknown tag: not found, no change', async () => {
    const { service, tags, upload, changes } = setup();
    await service.add(alice, upload.id, ['cute cats', 'dogs']);
    assert.deepEqual(names(await service.remove(alice, upload.id, '  Cute  Cats ')), ['dogs']);
    assert.deepEqual(tags.removals, ['cute-cats']);
    assert.equal(changes(), 2);
    await assert.rejects(service.remove(alice, upload.id, 'birds'), refused('not_found', /has no tag "birds"/));
    // A slug no tag could have is not looked for.
    await assert.rejects(service.remove(alice, upload.id, 'dogs!'), refused('not_found'));
    await assert.rejects(service.remove(alice, upload.id, 'x'.repeat(33)), refused('not_found'));
    assert.deepEqual(tags.removals, ['cute-cats', 'birds']);
    assert.equal(changes(), 2);
    await assert.rejects(service.remove(bob, upload.id, 'dogs'), refused('forbidden'));
    assert.deepEqual(names(await service.remove(admin, upload.id, 'dogs')), []);
  });

  test('suggest normalizes the prefix and returns the store’s most used tags first', async () => {
    const { service, tags, uploads, upload } = setup();
    await service.add(alice, upload.id, ['cats', 'cars']);
    const second = uploads.add({ userId: alice.userId });
    await service.add(alice, second.id, ['cars', 'dogs']);
    const { tags: found, next_cursor } = await service.suggest('  ＣＡ ', 10);
    assert.equal(next_cursor, null);
    assert.deepEqual(tags.suggestions, ['ca']);
    assert.deepEqual(
      found.map((t) => [t.name, t.uploads]),
      [
        ['cars', 2],
        ['cats', 1],
      ],
    );
    const first = await service.suggest('', 1);
    assert.deepEqual(
      first.tags.map((t) => t.name),
      ['cars'],
    );
    const next = await service.suggest('', 1, first.next_cursor ?? undefined);
    assert.deepEqual(
      next.tags.map((t) => t.name),
      ['cats'],
      'the cursor leads on after the last tag shown',
    );
    await assert.rejects(service.suggest('', 2, first.next_cursor ?? undefined), refused('invalid_cursor'));
  });
});
