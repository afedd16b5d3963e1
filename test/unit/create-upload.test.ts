/**
 * The upload use case over in-memory ports: every branch of POST /api/upload without HTTP, a database,
 * files or worker threads.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { AppError } from '../../src/domain/errors.ts';
import { IdempotencyService } from '../../src/domain/idempotency.ts';
import type { HumanPolicy } from '../../src/domain/person-policy.ts';
import type { AiPolicy } from '../../src/domain/uploads/ai-label.ts';
import { provenanceOf, type Provenance } from '../../src/domain/uploads/provenance.ts';
import { CreateUpload, type ByteSource, type UploadRequest } from '../../src/domain/uploads/create-upload.ts';
import { UploadService } from '../../src/domain/uploads/upload.service.ts';
import {
  FakeFetcher,
  FakeProcessor,
  MemoryIdempotencyStore,
  MemoryMedia,
  MemoryUploads,
  testPrincipal,
} from '../support/memory-ports.ts';

const alice = testPrincipal('alice');
const bob = testPrincipal('bob');

function setup(opts: { humanPolicy?: HumanPolicy; aiPolicy?: AiPolicy; shuttingDown?: boolean } = {}) {
  const uploads = new MemoryUploads();
  for (const p of [alice, bob]) uploads.usernames.set(p.userId, p.username);
  const media = new MemoryMedia();
  const processor = new FakeProcessor();
  const fetcher = new FakeFetcher();
  const outcomes: string[] = [];
  let shuttingDown = opts.shuttingDown ?? false;
  const service = new UploadService({
    uploads,
    media,
    processor,
    fetcher,
    clock: { now: () => new Date('2026-11-25T12:00:00Z') },
    policy: {
      humanPolicy: opts.humanPolicy ?? 'reject',
      humanThreshold: 0.5,
      humanReviewThreshold: 0.3,
      nearDuplicateDistance: 4,
      blocklistDistance: 8,
      ...(opts.aiPolicy ? { aiPolicy: opts.aiPolicy } : {}),
    },
  });
  const useCase = new CreateUpload({
    uploads: service,
    idempotency: new IdempotencyService({ store: new MemoryIdempotencyStore(), clock: { now: () => new Date() } }),
    isShuttingDown: () => shuttingDown,
    outcomes: {
      accepted: (type) => outcomes.push(`accepted ${type}`),
      rejected: (reason) => outcomes.push(`rejected ${reason}`),
    },
  });
  return {
    uploads,
    media,
    processor,
    fetcher,
    outcomes,
    useCase,
    shutDown: () => (shuttingDown = true),
    /** Nothing staged is left, whatever happened. */
    assertNothingStaged: () => assert.deepEqual([...media.staged], []),
  };
}

/** A received file whose bytes are `text`; counts how often it is read. */
function file(text: string, name = 'cat.jpg'): ByteSource & { reads: number } {
  const bytes = Buffer.from(text);
  const f = {
    reads: 0,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    originalName: name,
    read: async () => {
      f.reads++;
      return new Uint8Array(bytes).buffer;
    },
  };
  return f;
}

const image = (f: ByteSource | null, extra: Partial<UploadRequest> = {}): UploadRequest => ({
  uploadType: 'image',
  description: 'a cat',
  tags: 'cats, cute',
  isPrivate: false,
  file: f,
  imageUrl: undefined,
  externalUrl: undefined,
  ...extra,
});

const body = (a: { body: string }) => JSON.parse(a.body);

async function rejects(p: Promise<unknown>, code: string, message?: RegExp): Promise<AppError> {
  const e = await p.then(
    () => assert.fail('expected a rejection'),
    (err: unknown) => err,
  );
  assert.ok(e instanceof AppError, String(e));
  assert.equal(e.code, code);
  if (message) assert.match(e.message, message);
  return e;
}

describe('each upload type', () => {
  test('image: processed, one row, its files moved into place, 201 with the record; counted as accepted', async () => {
    const s = setup();
    s.processor.images.set('cat', { phash: '0000000000000000' });
    const answer = await s.useCase.run(alice, image(file('cat')));
    assert.equal(answer.status, 201);
    assert.equal(answer.replayed, false);
    const record = body(answer);
    assert.deepEqual(answer.created, { id: record.id, uploadType: 'image' });
    assert.equal(record.original_name, 'cat.jpg');
    assert.deepEqual(
      record.tags.map((t: { name: string }) => t.name),
      ['cats', 'cute'],
    );
    assert.equal(s.uploads.rows.size, 1);
    assert.deepEqual([...s.media.stored], [s.uploads.rows.get(record.id)!.mediaKey]);
    s.assertNothingStaged();
    assert.deepEqual(s.outcomes, ['accepted image']);
  });

  test('image_url: the bytes come from the fetcher; source_url is set, original_name from the URL path', async () => {
    const s = setup();
    s.processor.images.set('dog', { phash: 'ffffffffffffffff' });
    s.fetcher.pages.set('https://example.com/pics/dog.png', 'dog');
    const answer = await s.useCase.run(alice, {
      ...image(null),
      uploadType: 'image_url',
      imageUrl: 'https://example.com/pics/dog.png',
    });
    assert.equal(answer.status, 201);
    assert.equal(body(answer).source_url, 'https://example.com/pics/dog.png');
    assert.equal(body(answer).original_name, 'dog.png');
    assert.deepEqual(s.outcomes, ['accepted image']);
  });

  test('image_url that cannot be fetched: 400 fetch_failed, nothing stored, counted by its code', async () => {
    const s = setup();
    await rejects(
      s.useCase.run(alice, { ...image(null), uploadType: 'image_url', imageUrl: 'https://example.com/gone.png' }),
      'fetch_failed',
    );
    assert.equal(s.uploads.rows.size, 0);
    s.assertNothingStaged();
    assert.deepEqual(s.outcomes, ['rejected fetch_failed']);
  });

  test('link: no byte source and no processing; the embed comes from the URL', async () => {
    const s = setup();
    const answer = await s.useCase.run(alice, {
      ...image(null),
      uploadType: 'link',
      externalUrl: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ',
    });
    assert.equal(answer.status, 201);
    assert.equal(body(answer).upload_type, 'link');
    assert.equal(body(answer).embed.provider, 'youtube');
    assert.equal(s.processor.hashed, 0);
    assert.deepEqual(s.outcomes, ['accepted link']);
  });

  for (const [type, field] of [
    ['image', 'file'],
    ['image_url', 'image_url'],
    ['link', 'external_url'],
  ] as const) {
    test(`${type} without ${field}: 400 invalid_request naming it, before any work`, async () => {
      const s = setup();
      await rejects(s.useCase.run(alice, { ...image(null), uploadType: type }), 'invalid_request', new RegExp(field));
      assert.equal(s.uploads.rows.size, 0);
      assert.equal(s.processor.hashed, 0);
      assert.deepEqual(s.outcomes, ['rejected invalid_request']);
    });
  }

  test('eleven tags: 400 too_many_tags before any work', async () => {
    const s = setup();
    s.processor.images.set('cat', { phash: '0000000000000000' });
    const tags = Array.from({ length: 11 }, (_, i) => `t${i}`).join(',');
    await rejects(s.useCase.run(alice, image(file('cat'), { tags })), 'too_many_tags');
    assert.equal(s.processor.hashed, 0);
  });
});

describe('duplicates', () => {
  test('exact: 200 notice naming the first upload; the bytes are not even read, nothing staged or stored', async () => {
    const s = setup();
    s.processor.images.set('cat', { phash: '0000000000000000' });
    const first = await s.useCase.run(alice, image(file('cat')));
    const again = file('cat');
    const answer = await s.useCase.run(bob, image(again));
    assert.equal(answer.status, 200);
    assert.equal(answer.created, null);
    assert.deepEqual(
      { ...body(answer), message: undefined },
      { duplicate: true, existingUploadId: body(first).id, match: 'exact', distance: 0, message: undefined },
    );
    assert.equal(again.reads, 0);
    assert.equal(s.uploads.rows.size, 1);
    s.assertNothingStaged();
    assert.deepEqual(s.outcomes, ['accepted image', 'rejected duplicate']);
  });

  test('near: refused as soon as the hash is known (hashed, never encoded), with its distance', async () => {
    const s = setup();
    s.processor.images.set('cat', { phash: '0000000000000000' });
    s.processor.images.set('cat, resized', { phash: '0000000000000003' });
    const first = await s.useCase.run(alice, image(file('cat')));
    const answer = await s.useCase.run(bob, image(file('cat, resized')));
    assert.equal(answer.status, 200);
    assert.equal(body(answer).match, 'near');
    assert.equal(body(answer).distance, 2);
    assert.equal(body(answer).existingUploadId, body(first).id);
    assert.deepEqual([s.processor.hashed, s.processor.encoded], [2, 1]);
    s.assertNothingStaged();
    assert.equal(s.media.stored.size, 1);
  });

  test(
    "another user's private twin is not revealed: the same path as fresh bytes, " + 'a new record sharing its files',
    async () => {
      const s = setup();
      s.processor.images.set('secret', { phash: '0000000000000000' });
      const hidden = await s.useCase.run(alice, image(file('secret'), { isPrivate: true }));
      const answer = await s.useCase.run(bob, image(file('secret')));
      assert.equal(answer.status, 201);
      assert.notEqual(body(answer).id, body(hidden).id);
      assert.ok(!answer.body.includes(body(hidden).id), 'nothing in the answer names the private upload');
      assert.equal(s.processor.encoded, 2, 'the whole pipeline ran, as for fresh bytes');
      const [a, b] = [s.uploads.rows.get(body(hidden).id)!, s.uploads.rows.get(body(answer).id)!];
      assert.equal(b.mediaKey, a.mediaKey, 'the stored files are shared, not copied');
      assert.equal(s.media.stored.size, 1);
      s.assertNothingStaged();
    },
  );
});

describe('person policy', () => {
  test('reject: 400 human_detected, nothing stored or staged, counted by its code', async () => {
    const s = setup({ humanPolicy: 'reject' });
    s.processor.images.set('person', { phash: '0000000000000000', humanScore: 0.9 });
    await rejects(s.useCase.run(alice, image(file('person'))), 'human_detected', /score 0\.900/);
    assert.equal(s.uploads.rows.size, 0);
    assert.equal(s.media.stored.size, 0);
    s.assertNothingStaged();
    assert.deepEqual(s.outcomes, ['rejected human_detected']);
  });

  test('reject, gray zone (review 0.3 ≤ score < sure 0.5): 201 held with a person flag and its boxes', async () => {
    const s = setup({ humanPolicy: 'reject' });
    const boxes = [{ x: 0.1, y: 0.2, width: 0.3, height: 0.4, score: 0.4 }];
    s.processor.images.set('unsure', { phash: '0000000000000000', humanScore: 0.4, humanBoxes: boxes });
    s.processor.images.set('clear', { phash: 'ffffffffffffffff', humanScore: 0.29, humanBoxes: boxes });
    const answer = await s.useCase.run(alice, image(file('unsure')));
    assert.equal(answer.status, 201);
    assert.equal(body(answer).moderation, 'held');
    const row = [...s.uploads.rows.values()][0]!;
    assert.deepEqual([row.moderation, row.personFlag, row.humanBoxes], ['held', true, boxes]);
    // Under the review bound: accepted visible, no flag, no boxes kept.
    const clear = await s.useCase.run(bob, image(file('clear')));
    assert.equal(body(clear).moderation, 'visible');
    const other = [...s.uploads.rows.values()][1]!;
    assert.deepEqual([other.personFlag, other.humanBoxes], [false, null]);
    assert.deepEqual(s.outcomes, ['accepted image', 'accepted image']);
  });

  test('flag: accepted with its score stored', async () => {
    const s = setup({ humanPolicy: 'flag' });
    s.processor.images.set('person', { phash: '0000000000000000', humanScore: 0.9 });
    const answer = await s.useCase.run(alice, image(file('person')));
    assert.equal(answer.status, 201);
    assert.equal(body(answer).image.human_score, 0.9);
  });

  test('off: accepted without a score', async () => {
    const s = setup({ humanPolicy: 'off' });
    s.processor.images.set('person', { phash: '0000000000000000', humanScore: 0.9 });
    const answer = await s.useCase.run(alice, image(file('person')));
    assert.equal(body(answer).image.human_score, null);
  });
});

describe('Idempotency-Key', () => {
  test('a replay answers the stored text: same status and body, replayed, nothing new stored or counted', async () => {
    const s = setup();
    s.processor.images.set('cat', { phash: '0000000000000000' });
    const first = await s.useCase.run(alice, image(file('cat')), { idempotencyKey: 'key-1' });
    const again = await s.useCase.run(alice, image(file('cat')), { idempotencyKey: 'key-1' });
    assert.deepEqual([again.status, again.body, again.replayed], [first.status, first.body, true]);
    assert.deepEqual(again.created, first.created, 'a replay still names its upload (Location)');
    assert.equal(s.uploads.rows.size, 1);
    assert.equal(s.processor.hashed, 1);
    assert.deepEqual(s.outcomes, ['accepted image']);
  });

  test('the same key with a different request: 409 conflict, nothing stored', async () => {
    const s = setup();
    s.processor.images.set('cat', { phash: '0000000000000000' });
    await s.useCase.run(alice, image(file('cat')), { idempotencyKey: 'key-2' });
    await rejects(
      s.useCase.run(alice, image(file('cat'), { description: 'another' }), { idempotencyKey: 'key-2' }),
      'conflict',
    );
    assert.equal(s.uploads.rows.size, 1);
  });

  test('a malformed key: 400 invalid_request naming Idempotency-Key', async () => {
    const s = setup();
    await rejects(
      s.useCase.run(alice, image(file('cat')), { idempotencyKey: 'has space' }),
      'invalid_request',
      /Idempotency-Key/,
    );
  });

  test('another user may use the same key for their own request', async () => {
    const s = setup();
    s.processor.images.set('cat', { phash: '0000000000000000' });
    s.processor.images.set('dog', { phash: 'ffffffffffffffff' });
    await s.useCase.run(alice, image(file('cat')), { idempotencyKey: 'key-3' });
    const other = await s.useCase.run(bob, image(file('dog')), { idempotencyKey: 'key-3' });
    assert.equal(other.status, 201);
    assert.equal(other.replayed, false);
  });
});

describe('shutdown and client abort', () => {
  test('shutting down: a new upload is refused at admission (503); one admitted before it finishes', async () => {
    const s = setup();
    s.processor.images.set('cat', { phash: '0000000000000000' });
    s.useCase.assertAccepting(); // admitted: its body is on its way
    s.shutDown();
    assert.throws(
      () => s.useCase.assertAccepting(),
      (e: AppError) => e.code === 'busy' && Number(e.headers['Retry-After']) >= 1 && /shutting down/.test(e.message),
    );
    const admitted = await s.useCase.run(alice, image(file('cat')));
    assert.equal(admitted.status, 201, 'the drain lets an admitted upload finish');
  });

  test(
    'the client goes while its image waits for a worker: nothing stored, the staged directory removed, ' +
      'the key free for a retry',
    async () => {
      const s = setup();
      s.processor.images.set('cat', { phash: '0000000000000000' });
      let open!: () => void;
      s.processor.gate = new Promise((r) => (open = r));
      const client = new AbortController();
      const running = s.useCase.run(alice, image(file('cat')), { idempotencyKey: 'key-4', signal: client.signal });
      await new Promise((r) => setImmediate(r));
      assert.equal(s.media.staged.size, 1, 'staged while it waits');
      client.abort(new Error('client disconnected'));
      open();
      await rejects(running, 'busy');
      assert.equal(s.uploads.rows.size, 0);
      s.assertNothingStaged();
      s.processor.gate = null;
      const retry = await s.useCase.run(alice, image(file('cat')), { idempotencyKey: 'key-4' });
      assert.equal(retry.status, 201);
      assert.equal(retry.replayed, false);
    },
  );
});

describe('AI_POLICY: an image whose provenance marker says generated', () => {
  const IPTC = 'trainedAlgorithmicMedia';
  const xmpMarked: Provenance = provenanceOf(IPTC, null);
  const c2paMarked: Provenance = provenanceOf(null, {
    present: true,
    valid: null,
    generator: 'Imagine 3',
    signer: 'Acme AI',
    actions: [{ action: 'c2pa.created', digital_source_type: IPTC, software_agent: null, when: null }],
  });
  const camera: Provenance = provenanceOf('digitalCapture', null);

  function marked(policy: AiPolicy | undefined, provenance: Provenance) {
    const s = setup(policy ? { aiPolicy: policy, humanPolicy: 'off' } : { humanPolicy: 'off' });
    s.processor.images.set('gen', { phash: '0000000000000000', provenance });
    return s;
  }

  test('reject: 400 ai_generated naming the marker; no row, nothing staged or stored', async () => {
    for (const [provenance, named] of [
      [xmpMarked, /IPTC DigitalSourceType trainedAlgorithmicMedia/],
      [c2paMarked, /C2PA manifest signed by Acme AI \(trainedAlgorithmicMedia, not verified\)/],
    ] as const) {
      const s = marked('reject', provenance);
      await rejects(s.useCase.run(alice, image(file('gen'))), 'ai_generated', named);
      assert.equal(s.uploads.rows.size, 0);
      assert.equal(s.media.stored.size, 0);
      s.assertNothingStaged();
      assert.deepEqual(s.outcomes, ['rejected ai_generated']);
    }
  });

  test('label (the default): 201 visible, labelled by the marker, the provenance on the record', async () => {
    const s = marked(undefined, xmpMarked);
    const record = body(await s.useCase.run(alice, image(file('gen'))));
    assert.equal(record.moderation, 'visible');
    assert.equal(record.ai_label, 'marker');
    assert.deepEqual(record.provenance, xmpMarked);
  });

  test('hold: 201 held, the hold reason naming the marker', async () => {
    const s = marked('hold', c2paMarked);
    const record = body(await s.useCase.run(alice, image(file('gen'))));
    assert.equal(record.moderation, 'held');
    assert.equal(record.ai_label, 'marker');
    const row = s.uploads.rows.get(record.id)! as unknown as { autoHoldReason?: string };
    assert.match(row.autoHoldReason ?? '', /^AI-generated: C2PA manifest signed by Acme AI/);
  });

  test('off: accepted visible, nothing read is kept, no label', async () => {
    const s = marked('off', xmpMarked);
    const record = body(await s.useCase.run(alice, image(file('gen'))));
    assert.deepEqual([record.moderation, record.ai_label, record.provenance], ['visible', null, null]);
  });

  test('a marker that says otherwise, or none: no label under any policy; null is not false', async () => {
    for (const policy of ['label', 'hold', 'reject'] as const) {
      const s = marked(policy, camera);
      s.processor.images.set('plain', { phash: 'ffffffffffffffff' });
      const cam = body(await s.useCase.run(alice, image(file('gen'))));
      assert.deepEqual([cam.moderation, cam.ai_label, cam.provenance.ai_generated], ['visible', null, false]);
      const plain = body(await s.useCase.run(alice, image(file('plain', 'plain.jpg'))));
      assert.deepEqual(plain.provenance, { ai_generated: null, source_type: null, c2pa: null });
    }
  });

  test('links carry no provenance', async () => {
    const s = setup();
    const link = body(
      await s.useCase.run(alice, { ...image(null), uploadType: 'link', externalUrl: 'https://example.com/a' }),
    );
    assert.deepEqual([link.provenance, link.ai_label], [null, null]);
  });
});

describe("the owner's label", () => {
  test('true adds an owner label; false removes it; a marker-based one is never removed (400)', async () => {
    const s = setup({ humanPolicy: 'off' });
    s.processor.images.set('gen', {
      phash: '0000000000000000',
      provenance: provenanceOf('compositeWithTrainedAlgorithmicMedia', null),
    });
    s.processor.images.set('own', { phash: 'ffffffffffffffff' });
    const own = body(await s.useCase.run(alice, image(file('own'))));
    const uploads = s.uploads;
    const svc = new UploadService({
      uploads,
      media: s.media,
      processor: s.processor,
      fetcher: s.fetcher,
      clock: { now: () => new Date() },
      policy: { humanPolicy: 'off', humanThreshold: 0.5, nearDuplicateDistance: 4, blocklistDistance: 8 },
    });
    assert.equal((await svc.setAiGenerated(alice, own.id, true, null)).ai_label, 'owner');
    await rejects(svc.setAiGenerated(bob, own.id, false, null), 'forbidden');
    assert.equal((await svc.setAiGenerated(alice, own.id, false, null)).ai_label, null);
    const gen = body(await s.useCase.run(alice, image(file('gen'))));
    assert.equal(gen.ai_label, 'marker');
    // true keeps the marker's label (what it rests on does not change)
    assert.equal((await svc.setAiGenerated(alice, gen.id, true, null)).ai_label, 'marker');
    await rejects(
      svc.setAiGenerated(alice, gen.id, false, null),
      'invalid_request',
      /ai_generated cannot be false: the label rests on a marker in the file \(IPTC DigitalSourceType compositeWithTrainedAlgorithmicMedia/,
    );
    assert.equal(uploads.rows.get(gen.id)!.aiLabel, 'marker');
  });
});
