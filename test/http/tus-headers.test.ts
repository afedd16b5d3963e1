/**
 * tus creation (`POST /api/uploads/resumable`) with the header values clients and attackers send, generated, judged
 * by tus 1.0 and API.md rather than by the code: `Upload-Length` is "a non-negative integer" (digits, any count of
 * them; HTTP strips the spaces around a value), 0 is an empty file (400), past 10 MiB is 413 `payload_too_large`,
 * anything else (a sign, an exponent, hex, a fraction, other digits) is 400 naming it; `Upload-Metadata` is comma-
 * separated `key base64value` pairs, each key once, a key alone allowed, and a value must be UTF-8 text (bytes that
 * are not were stored as U+FFFD). Every answer is 201 or a contract 4xx, never a 5xx; a refused creation leaves no
 * resumable upload behind.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startApp, type TestApp } from '../support/app.ts';
import { registerUser, type TestUser } from '../support/users.ts';

let app: TestApp;
let user: TestUser;
const MAX = 10 * 1024 * 1024;

before(async () => {
  app = await startApp({ RESUMABLE_MAX_OPEN: '10000' });
  user = await registerUser(app.api);
});
after(() => app.close());

const openUploads = async (): Promise<number> =>
  Number(
    (
      await app.composed.db
        .db()
        .selectFrom('resumable_uploads')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

const length = fc.oneof(
  fc.integer({ min: 1, max: MAX }).map(String),
  fc.integer({ min: MAX + 1, max: 2 ** 45 }).map(String),
  fc.stringMatching(/^[1-9][0-9]{15,30}$/),
  fc.integer({ min: 1, max: 4096 }).map((n) => `000${n}`),
  fc.constantFrom('0', '00', ' 123 ', '\t99'),
  fc.constantFrom('-1', '+10', '1e3', '0x10', '10.0', '10,20', 'NaN', 'Infinity', '0b11', '1_000', '\xb9\xb2', '10 10'),
);

/** What tus and API.md say of an Upload-Length. */
function lengthVerdict(raw: string): { status: 201 | 400 | 413; code?: string } {
  const v = raw.trim();
  if (!/^[0-9]+$/.test(v)) return { status: 400, code: 'invalid_request' };
  const n = BigInt(v);
  if (n === 0n) return { status: 400, code: 'invalid_request' };
  if (n > BigInt(MAX)) return { status: 413, code: 'payload_too_large' };
  return { status: 201 };
}

const utf8 = (s: string) => Buffer.from(s).toString('base64');
const value = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => ({ b64: utf8(s), ok: true })) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom([0xff], [0xc3], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0x61, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80])
      .map((bytes) => ({ b64: Buffer.from(bytes).toString('base64'), ok: false })),
  },
  { weight: 1, arbitrary: fc.constantFrom('%%%%', 'YQ', 'A===', 'YQ==YQ==').map((b64) => ({ b64, ok: false })) },
  { weight: 1, arbitrary: fc.constant({ b64: null as string | null, ok: true }) },
);
const KEYS = ['filename', 'tags', 'is_private', 'x-client', 'x_trace', 'checksum-hint'];
const metadata = fc
  .array(fc.tuple(fc.constantFrom(...KEYS), value), { maxLength: 4 })
  .map((pairs) => {
    const keys = pairs.map(([k]) => k);
    const ok = new Set(keys).size === keys.length && pairs.every(([, v]) => v.ok);
    const header = pairs.map(([k, v]) => (v.b64 === null ? k : `${k} ${v.b64}`)).join(',');
    return { header, ok };
  })
  // `tags` only with values the tag rule takes, `is_private` only true/false: those fields have rules of their own.
  .filter(({ header }) => !/(^|,)(tags|is_private) /.test(header));

test('Upload-Length and Upload-Metadata in every form: as tus and API.md say, never a 5xx, nothing left', async () => {
  const before = await openUploads();
  const seen = new Map<number, number>();
  let created = 0;
  await fc.assert(
    fc.asyncProperty(length, metadata, async (len, meta) => {
      const headers: Record<string, string> = {
        'tus-resumable': '1.0.0',
        authorization: `Bearer ${user.token}`,
        'upload-length': len,
      };
      if (meta.header) headers['upload-metadata'] = meta.header;
      const res = await fetch(`${app.url}/api/uploads/resumable`, { method: 'POST', headers });
      const text = await res.text();
      const sent = `Upload-Length ${JSON.stringify(len)}, Upload-Metadata ${JSON.stringify(meta.header)}`;
      const what = `${sent}: ${res.status} ${text}`;
      seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
      const byLength = lengthVerdict(len);
      if (res.status === 201) {
        created++;
        assert.ok(byLength.status === 201 && meta.ok, what);
        assert.match(res.headers.get('location') ?? '', /^\/api\/uploads\/resumable\/[\w-]+$/, what);
        return;
      }
      const body = JSON.parse(text) as { error: string; message: string };
      assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], what);
      // Refused for its length (as tus and API.md say), or for its metadata when that is bad.
      const forLength = byLength.status !== 201 && res.status === byLength.status && body.error === byLength.code;
      const forMeta = !meta.ok && res.status === 400 && body.error === 'invalid_request';
      assert.ok(forLength || forMeta, what);
      assert.match(body.message, forLength && !forMeta ? /Upload-Length/ : /Upload-(Length|Metadata)/, what);
    }),
    { numRuns: 150 },
  );
  assert.equal(await openUploads(), before + created, 'an upload for each 201 and none other');
  // Every outcome reached (measured over seeds, of 150: 201 ~35–46, 400 ~58–68, 413 ~42–55); the bar sits far under
  // each, so a generator that stopped making one fails here rather than passing vacuously.
  for (const status of [201, 400, 413]) assert.ok((seen.get(status) ?? 0) >= 8, JSON.stringify([...seen]));
});
