/**
 * Every operation of the OpenAPI document, called with what fast-check makes of its path, query and body: ids that
 * are not ids (dot segments, percent-encodings, NULs, overlong, non-ASCII), query values of the wrong type or
 * repeated, JSON bodies of any shape (the documented fields with values of other types, arrays, scalars, nesting,
 * prototype keys), bodies that are not JSON, and credentials that are missing, garbage or a user's or an admin's.
 * Whatever comes, the service answers as API.md's conventions say: never a 500, every non-2xx but 304 the error
 * body `{"error", "message"}`, and no stack trace, SQL or server path in it; and each answer is what the OpenAPI
 * document says of its operation (test/support/conformance.ts: the status, headers and body schema, an error's code
 * among the operation's).
 * Then multipart uploads of fuzzed fields, URLs (the addresses the URL fetch must refuse among them) and bytes (real
 * images cut short or with header bytes flipped): 201, a 200 duplicate or a 4xx, and no row, staged or temp file
 * left by a refusal; and the web pages at fuzzed paths and queries: never a 500, never a redirect off the site.
 * The seed is fixed (a failure replays): PIXVOTE_FUZZ_SEED changes it, PIXVOTE_FUZZ_RUNS=N makes N times the calls
 * (25 per operation, 150 uploads, 200 pages: ~6 s); PIXVOTE_FUZZ_OP='POST /api/vote' keeps the operations whose
 * "METHOD path" contains it, PIXVOTE_FUZZ_LOG=1 prints every call. A bug planted in one operation (a 500 on an
 * admitted `none` vote) fails it at the default count. Its first runs (2026-12-02, five times the calls, seeds 1–3,
 * 11–15 and 20261202, both databases) found a NUL in a resumable upload's id answered 500 on PostgreSQL and tus's
 * 412/415/460 missing from the document (both fixed); then nothing more (seeds 21 and 22 too, with the plausible
 * values of the contract's moderation, report, tag and webhook fields: 32–35 of the 55 operations answered 2xx).
 * Each path parameter is then drawn from real resources of the kind it names, made through the API before its
 * operations (tokens, webhooks, blocklist entries, jobs, a vote ring, tus uploads, an image, tag slugs, the
 * reference page's files), and a third of the calls are plausible in every part (54–55 operations answer 2xx;
 * the JSON link upload is left to chance). Those found (2026-12-02, seeds 1–5, three times the calls, both
 * databases): a creation's first chunk of another type answered an undocumented 415 after spending the upload
 * limit, a termination's malformed tus header an undocumented 400, an Upload-Length on a PATCH or an
 * Upload-Concat the library's 501, and the feed page `/?tag=%00` a 500 on PostgreSQL (all fixed).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { Client } from 'undici';
import { startApp, type TestApp } from '../support/app.ts';
import { readAnswer } from '../support/http.ts';
import { checkConformance, ConformanceError } from '../support/conformance.ts';
import { STATUS_OF, type ErrorCode } from '../../src/domain/errors.ts';
import { registerAdmin, registerUser, type TestUser } from '../support/users.ts';
import { countUploads, diskState, uploadImage, uploadLink } from '../support/uploads.ts';
import { animatedGif, hugeHeaderPng, nonImageBytes, photoJpeg, pngImage, svgImage } from '../support/fixtures.ts';

/** What must never reach a client: a stack frame, a source path, SQL. */
const LEAKS = [
  /\n\s+at /,
  /\.(ts|js|mjs):\d+/,
  /\/work\/|\/tmp\/|node_modules/,
  /\b(select|insert|update) .* (from|into|set) /i,
];

const SEED = Number(process.env.PIXVOTE_FUZZ_SEED) || 4_8_46;
/** How many times the default number of calls (25 per operation, 150 uploads, 200 pages). */
const RUNS = Number(process.env.PIXVOTE_FUZZ_RUNS) || 1;

/**
 * What every answer of the API must be: no 5xx (but oembed's 501), nothing leaked, and what the OpenAPI document
 * says of the operation the path routes to (a documented status, its headers, a body of its schema: an error's code
 * among those the operation lists); a path that routes to no operation (an empty segment) a JSON error all the same.
 */
function answersAsDocumented(
  method: string,
  url: string,
  status: number,
  headers: Headers,
  text: string,
  where: string,
) {
  assert.ok(status < 500 || (status === 501 && url.includes('/api/oembed')), where);
  // The reference page's script and stylesheet are swagger-ui-dist's files as published, not the server's words.
  const bundled = /^text\/(javascript|css)\b/.test(headers.get('content-type') ?? '') && status === 200;
  for (const leak of bundled ? [] : LEAKS) assert.doesNotMatch(text, leak, where);
  const unrouted = (e: unknown) =>
    e instanceof ConformanceError && /no operation in the OpenAPI document/.test(e.message);
  const failureAt = (u: string): unknown => {
    try {
      checkConformance({ method, url: u, status, headers, text });
      return null;
    } catch (e) {
      return e;
    }
  };
  let failure = failureAt(url);
  // The router is not strict about a trailing slash (`/docs/` is `/docs`): the operation without it.
  const [path, query] = url.split('?') as [string, string | undefined];
  if (unrouted(failure) && /[^/]\/$/.test(path))
    failure = failureAt(path.slice(0, -1) + (query === undefined ? '' : `?${query}`));
  if (failure && !unrouted(failure)) throw new Error(`${where}\n${(failure as Error).message}`, { cause: failure });
  if (failure) {
    const json = JSON.parse(text) as { error?: unknown; message?: unknown };
    // Unrouted (an empty segment): the first refusal of the layers in front of the router (the body, the
    // credentials) or 404, with its code's status; under the tus path a 412 for a missing Tus-Resumable first.
    const code = String(json.error) as ErrorCode;
    const tus = status === 412 && new URL(url).pathname.startsWith('/api/uploads/resumable');
    assert.ok(Object.hasOwn(STATUS_OF, code) && (STATUS_OF[code] === status || tus), where);
    assert.ok(typeof json.message === 'string' && json.message.length > 0, where);
  }
}

/** What a client can put on the request line: visible ASCII as is (`\`, dot segments, a stray `%`), the rest
 * percent-encoded as a browser would. */
const onTheWire = (path: string) => path.replace(/[^\x21-\x7e]/gu, (ch) => encodeURIComponent(ch));

interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string }[];
  /** The documented JSON body's fields, each with the values its schema enumerates (null: any of its type). */
  body: Record<string, unknown[] | null> | null;
  /** The body's required fields (of any alternative of a union). */
  required: string[];
}

let app: TestApp;
let user: TestUser;
let admin: TestUser;
/** Uploads of `user` (links of several providers and an image, tagged 'cats, dogs'): what `{id}` names by default. */
let ids: string[];
let victim: TestUser;

/** What a path parameter names: each kind is made through the API before the operations whose paths name it. */
type Kind = 'upload' | 'token' | 'webhook' | 'blocklist' | 'job' | 'ring' | 'resumable' | 'user' | 'slug' | 'asset';
/** The kind of `{id}` by the path's start (the first match wins); any other `{id}` is an upload's. */
const KIND_OF: [RegExp, Kind][] = [
  [/^\/api\/auth\/tokens\//, 'token'],
  [/^\/api\/uploads\/resumable\//, 'resumable'],
  [/^\/api\/admin\/vote-rings\//, 'ring'],
  [/^\/api\/admin\/blocklist\//, 'blocklist'],
  [/^\/api\/admin\/jobs\//, 'job'],
  [/^\/api\/admin\/users\//, 'user'],
  [/^\/api\/webhooks\//, 'webhook'],
];
const kindOf = (path: string, param: string): Kind =>
  param === '{slug}'
    ? 'slug'
    : param === '{asset}'
      ? 'asset'
      : (KIND_OF.find(([re]) => re.test(path))?.[1] ?? 'upload');
/** The kinds made as `[user's, admin's]`: only its owner may act on one. */
const OWNED: Kind[] = ['token', 'webhook', 'resumable'];
/** The ids made so far, by kind (what the last make of each left). */
const made = new Map<Kind, string[]>();
const idsOf = (kind: Kind) => made.get(kind) ?? [];
/** The SHA-256 (hex) of the image among `ids`: a digest `POST /api/uploads/check` finds. */
let imageSha = '';
/** A fresh picture per make (a duplicate would answer 200 and no new id). */
let pictures = 100;
/** Where webhooks point: https on a host that never resolves (`.invalid`), so no delivery leaves this machine. */
const HOOK_URL = 'https://hooks.pixvote-fuzz.invalid/hook';

/** Asserts a setup call's status; returns its body. */
function ok(r: { status: number; text: string; body: any }, status: number, what: string) {
  assert.equal(r.status, status, `${what}: ${r.text}`);
  return r.body;
}

/**
 * How each kind is made: real resources through the HTTP API, owned by `user` and by `admin` where an owner may act
 * on its own (tokens, webhooks, resumable uploads), so that the fuzzed caller is sometimes the owner.
 */
const MAKE: Record<Kind, () => Promise<string[]>> = {
  async upload() {
    const out: string[] = [];
    for (const external_url of [
      `https://www.youtube.com/watch?v=${randomBytes(8).toString('base64url').slice(0, 11)}`,
      `https://open.spotify.com/track/${randomBytes(16).toString('hex').slice(0, 22)}`,
      `https://example.com/${randomBytes(8).toString('hex')}`,
    ])
      out.push(await uploadLink(app.api, user, { external_url, tags: 'cats, dogs' }));
    // An image too: its variants, provenance and blocklisting are what link uploads have not.
    const png = await pngImage(40, 30, pictures++);
    imageSha = createHash('sha256').update(png).digest('hex');
    out.push(ok(await uploadImage(app.api, user.token, png, { tags: 'cats, dogs' }, 'a.png'), 201, 'image').id);
    ids = out;
    return out;
  },
  token: () =>
    Promise.all(
      [user, admin].map(
        async (u) =>
          ok(await app.api.post('/api/auth/tokens/generate', { name: 'fuzz' }, { token: u.token }), 201, 'token').id,
      ),
    ),
  webhook: () =>
    Promise.all(
      [user, admin].map(
        async (u) =>
          ok(
            await app.api.post('/api/webhooks', { url: HOOK_URL, events: ['upload.held'] }, { token: u.token }),
            201,
            'webhook',
          ).id,
      ),
    ),
  async blocklist() {
    const sha256 = randomBytes(32).toString('hex');
    const added = ok(
      await app.api.post('/api/admin/blocklist', { entries: [{ sha256, reason: 'fuzz' }] }, { token: admin.token }),
      200,
      'blocklist import',
    );
    const entries = ok(await app.api.get('/api/admin/blocklist?limit=50', { token: admin.token }), 200, 'blocklist')
      .entries as { id: string; sha256: string | null }[];
    made.set('job', [added.job.id]);
    return entries.filter((e) => e.sha256 === sha256).map((e) => e.id);
  },
  // The import's `blocklist_hold` job: a blocklist make sets both.
  job: async () => (await MAKE.blocklist(), idsOf('job')),
  ring: makeRing,
  resumable: () =>
    Promise.all(
      [user, admin].map((u) => {
        const headers = Object.fromEntries(TUS_HEADERS.POST!);
        return app.api
          .post('/api/uploads/resumable', undefined, { token: u.token, headers })
          .then((r) => (ok(r, 201, 'tus creation'), r.headers.get('location')!.split('/').at(-1)!));
      }),
    ),
  user: async () => [victim.id],
  slug: async () => ['cats', 'dogs'],
  // The reference page's files (docs.routes.ts ASSETS).
  asset: async () => ['swagger-ui-bundle.js', 'swagger-ui.css', 'docs-init.js'],
};

/**
 * A vote ring in the moderation queue: four fresh accounts upvoting both uploads of a fresh author, found by the
 * detector's job (run here, as vote-rings.test.ts does, instead of waiting for its interval). Its items' ids.
 */
async function makeRing(): Promise<string[]> {
  const author = await registerUser(app.api);
  const targets = [await uploadLink(app.api, author), await uploadLink(app.api, author)];
  const crew: TestUser[] = [];
  for (let i = 0; i < 4; i++) crew.push(await registerUser(app.api));
  for (const c of crew)
    for (const uploadId of targets)
      ok(await app.api.post('/api/vote', { uploadId, vote: 'fucks' }, { token: c.token }), 200, 'vote');
  await app.composed.detectVoteRings();
  const queue = ok(
    await app.api.get('/api/admin/moderation?status=open&limit=50', { token: admin.token }),
    200,
    'queue',
  );
  const rings = (queue.items as { kind: string; id: string; accounts: { id: string }[] }[]).filter(
    (i) => i.kind === 'vote_ring' && crew.every((c) => i.accounts.some((a) => a.id === c.id)),
  );
  assert.ok(rings.length > 0, `a vote ring of the crew is queued: ${JSON.stringify(queue.items)}`);
  return rings.map((i) => i.id);
}

/** The kinds an operation's calls draw from: its path's, and uploads for a body's `…Id` or oEmbed's page `url`. */
function kindsOf(op: Operation): Set<Kind> {
  const kinds = new Set((op.path.match(/\{[^}]+\}/g) ?? []).map((p) => kindOf(op.path, p)));
  if (Object.keys(op.body ?? {}).some((f) => /id$/i.test(f)) || op.params.some((p) => p.name === 'url'))
    kinds.add('upload');
  return kinds;
}

/** New resources of each kind `op` draws from: a fuzzed delete, ban or moderation took or changed some. */
async function freshIds(op: Operation): Promise<void> {
  for (const kind of kindsOf(op)) made.set(kind, await MAKE[kind]());
}
let operations: Operation[];
/** One connection pool to the app that sends paths as written. */
let raw: Client;

before(async () => {
  // Each operation on a tus upload makes two more, open until a fuzzed call ends them: RESUMABLE_MAX_OPEN's own
  // 429 is resumable.test.ts's, here it would only refuse the next make.
  app = await startApp({ RESUMABLE_MAX_OPEN: '100000' });
  raw = new Client(app.url);
  user = await registerUser(app.api);
  admin = await registerAdmin(app);
  victim = await registerUser(app.api);
  ids = await MAKE.upload();
  const doc = (await app.api.get('/api/openapi.json')).body as {
    paths: Record<string, Record<string, any>>;
    components?: { schemas?: Record<string, any> };
  };
  const schemaOf = (s: any): any => (s?.$ref ? doc.components?.schemas?.[s.$ref.split('/').at(-1)] : s);
  // A body's fields and what each enumerates; of a union (`POST /api/auth`), those of every alternative.
  const alternatives = (s: any): any[] => [s, ...(s.oneOf ?? s.anyOf ?? [])].map(schemaOf);
  const fieldsOf = (s: any): Record<string, unknown[] | null> => {
    const fields: Record<string, unknown[] | null> = {};
    for (const alt of alternatives(s))
      for (const [name, prop] of Object.entries<any>(alt.properties ?? {})) {
        const values = prop.enum ?? (prop.const === undefined ? null : [prop.const]);
        fields[name] = values ? [...(fields[name] ?? []), ...values] : (fields[name] ?? null);
      }
    return fields;
  };
  operations = [];
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])] as { name: string; in: string }[];
      const json = schemaOf(op.requestBody?.content?.['application/json']?.schema);
      operations.push({
        method: method.toUpperCase(),
        path,
        params,
        body: json ? fieldsOf(json) : null,
        required: json ? [...new Set(alternatives(json).flatMap((alt) => (alt.required ?? []) as string[]))] : [],
      });
    }
  assert.ok(operations.length > 30, `${operations.length} operations in the OpenAPI document`);
  // PIXVOTE_FUZZ_OP='POST /api/vote': only the operations whose "METHOD path" contains it.
  const only = process.env.PIXVOTE_FUZZ_OP;
  if (only) operations = operations.filter((o) => `${o.method} ${o.path}`.includes(only));
});
after(async () => {
  await raw?.close();
  await app?.close();
});

/** Strings a path segment or a query value should survive. */
const nasty = fc.oneof(
  fc.constantFrom(
    '',
    '.',
    '..',
    '%2e%2e',
    '%2E%2e%2f..',
    '..%2f..%2fetc%2fpasswd',
    '%00',
    '%ff%fe',
    '%',
    '%zz',
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    '0',
    '-1',
    '1e308',
    'NaN',
    'null',
    'true',
    '[]',
    '{}',
    '__proto__',
    'constructor',
    'x'.repeat(5000),
    '💥',
    '%F0%9F%92%A5',
    '\u202e',
    ' ',
    'a b',
  ),
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent),
  fc.uuid(),
  fc.integer().map(String),
);

/** A JSON value of any shape. */
const anyJson = fc.jsonValue({ maxDepth: 3 });

/** Values that pass a documented field's validation, by its name: so that later steps are reached too. */
const PLAUSIBLE: Record<string, unknown[]> = {
  vote: ['fucks', 'does_not_fuck', 'none'],
  action: ['login', 'register', 'approve', 'hold', 'remove', 'void', 'dismiss'],
  reason: ['spam', 'harassment', 'illegal', 'copyright', 'other'],
  note: ['looks copied', ''],
  block: ['none', 'exact', 'near'],
  is_private: [true, false],
  ai_generated: [true, false, null],
  remove_uploads: [true, false],
  tags: [['Cats', ' dogs '], ['x'], 'cats'],
  name: ['ci', 'my token'],
  expires_in: ['30d', '12h', '400d'],
  expires_at: ['2030-01-01T00:00:00.000Z', new Date(Date.now() + 86_400_000).toISOString()],
  scopes: [['upload'], ['vote', 'read'], ['manage']],
  url: [HOOK_URL, `${HOOK_URL}/2`, 'http://127.0.0.1/x', 'http://[::1]/', 'http://0x7f000001/'],
  events: [['upload.processed'], ['upload.held', 'upload.removed'], ['report.created'], []],
  enabled: [true, false],
  description: ['a hook', ''],
  entries: [[{ sha256: 'a'.repeat(64), reason: 'x' }], [{ phash: '0123456789abcdef' }], [{ pdq: 'f'.repeat(64) }], []],
  phash: ['0123456789abcdef'],
  until: ['2030-01-01T00:00:00.000Z', null, 'never'],
  // Query parameters.
  page: [1, 2, 834],
  limit: [1, 12, 50, 51],
  sort: ['new', 'top', 'hot', 'best'],
  type: ['image', 'link'],
  size: ['thumb', 'medium', 'full'],
  tag: ['cats', 'dogs'],
  q: ['ca', 'd'],
  format: ['json', 'xml'],
  status: ['open', 'closed'],
};

/** Strings that JSON carries and a database may not take: NUL, lone surrogates, control and bidi characters. */
const unstorable = fc.constantFrom(
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '\u0007\u001b[31m',
  '\u202eevil',
  '\ufeff',
);

/** A new account's name (a register that is no conflict). */
const freshName = fc.stringMatching(/^f_[a-z0-9]{10}$/);

/**
 * A plausible value of a body field: what only the running app knows (an account, a digest of a stored image) or
 * what must be new per call (a register's name, a link's URL); else what the document enumerates; else PLAUSIBLE.
 */
function plausible(field: string, enumerated: unknown[] | null): fc.Arbitrary<unknown> {
  if (field === 'email')
    return fc.oneof(
      fc.constant(user.email),
      freshName.map((n) => `${n}@example.test`),
    );
  if (field === 'username') return fc.oneof(fc.constant(user.username), freshName);
  if (field === 'password') return fc.constantFrom(user.password, 'pw-of-a-new-account');
  if (field === 'external_url') return freshName.map((n) => `https://example.com/${n}`);
  if (field === 'sha256')
    return fc.constantFrom([imageSha], ['a'.repeat(64)], [imageSha.toUpperCase(), 'b'.repeat(64)]);
  return fc.constantFrom(...(enumerated ?? PLAUSIBLE[field] ?? (/id$/i.test(field) ? ids : [1, 'x'])));
}

/** A query parameter's plausible values (strings as sent): oEmbed's `url` is the page of an upload made. */
function plausibleQuery(name: string): string[] {
  if (name === 'url') return ids.map((id) => encodeURIComponent(`${app.url}/uploads/${id}`));
  if (name === 'user') return [user.username];
  return (PLAUSIBLE[name] ?? ['1']).map(String);
}

const fieldValue = (field: string, enumerated: unknown[] | null) =>
  fc.oneof(anyJson, nasty, unstorable, { arbitrary: plausible(field, enumerated), weight: 6 });

type Fields = Record<string, unknown[] | null>;
/**
 * A JSON object of the documented fields, each of `value`; `freq`: one field in `freq` left out, but those in
 * `required`.
 */
const object = (
  fields: Fields | null,
  value: (field: string, enumerated: unknown[] | null) => fc.Arbitrary<unknown>,
  freq: number,
  required: string[] = [],
) =>
  fc
    .tuple(
      ...Object.entries(fields ?? {}).map(([f, e]) => {
        const pair = value(f, e).map((v) => [f, v]);
        return required.includes(f) ? pair : fc.option(pair, { freq });
      }),
    )
    .map((pairs) => JSON.stringify(Object.fromEntries(pairs.filter((p) => p !== null))));
/**
 * Each field plausible, half of the optional ones left out: a body that one bad field of several (or two fields
 * that exclude each other, `expires_in` and `expires_at`) would refuse reaches the operation.
 */
const plausibleBody = (op: Operation) => object(op.body, plausible, 2, op.required);

const body = (op: Operation) =>
  fc.oneof(
    fc.constant(undefined),
    // The documented fields, each with a value of any type (or a nasty string), some left out.
    { arbitrary: object(op.body, fieldValue, 5), weight: 6 },
    { arbitrary: plausibleBody(op), weight: 3 },
    anyJson.map((v) => JSON.stringify(v)),
    fc.constantFrom(
      '{',
      '{"a":',
      'nul',
      '\u0000',
      '{"__proto__": {"role": "admin"}}',
      '[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]',
    ),
    fc.string({ maxLength: 200 }),
  );

/** Request headers the routes read (tus, idempotency, conditional GET, request id), with values good and bad. */
const headerValue = fc.oneof(
  fc.constantFrom(
    '1.0.0',
    '0',
    '-1',
    '10485761',
    '99999999999999999999',
    'application/offset+octet-stream',
    '*',
    'W/"x"',
  ),
  fc.constantFrom(
    'filename eC5wbmc=,upload_type aW1hZ2U=',
    'upload_type',
    'x !!!',
    'sha256 AAAA',
    '%00',
    'x'.repeat(300),
  ),
  fc.string({ maxLength: 40 }).map((v) => v.trim()),
);
/** The tus headers a creation (a length any fuzzed body fits), a PATCH at the start or another request needs. */
const TUS_HEADERS: Record<string, [string, string][]> = {
  POST: [
    ['tus-resumable', '1.0.0'],
    ['upload-length', String(2 ** 20)],
  ],
  PATCH: [
    ['tus-resumable', '1.0.0'],
    ['upload-offset', '0'],
  ],
  DELETE: [['tus-resumable', '1.0.0']],
};
const OCTETS = 'application/offset+octet-stream';
/** Under the tus path, the protocol's own headers too (with the fuzzed ones after them): else only a 412. */
const headers = (tus: [string, string][] | undefined) => {
  const fuzzed = fc.array(
    fc.tuple(
      fc.constantFrom(
        'tus-resumable',
        'upload-offset',
        'upload-length',
        'upload-metadata',
        'upload-checksum',
        'upload-defer-length',
        'upload-concat',
        'idempotency-key',
        'if-none-match',
        'if-match',
        'x-request-id',
        'x-http-method-override',
        'range',
        'accept-encoding',
        'origin',
      ),
      headerValue,
    ),
    { maxLength: 4 },
  );
  if (!tus) return fuzzed;
  return fc.oneof(fuzzed, { arbitrary: fuzzed.map((h) => [...tus, ...h]), weight: 2 });
};

/** Mostly a user's or an admin's (what reaches past authentication), sometimes none or garbage. */
const credentials = () =>
  fc.oneof(
    { arbitrary: fc.constant('user'), weight: 4 },
    { arbitrary: fc.constant('admin'), weight: 3 },
    { arbitrary: fc.constant(null), weight: 2 },
    { arbitrary: fc.constantFrom('garbage', 'pv_garbage', 'Bearer', 'Basic dXNlcjpwdw=='), weight: 1 },
  );

function authorization(who: string | null): Record<string, string> {
  if (who === null) return {};
  if (who === 'user') return { authorization: `Bearer ${user.token}` };
  if (who === 'admin') return { authorization: `Bearer ${admin.token}` };
  if (who === 'Bearer' || who.startsWith('Basic')) return { authorization: who };
  return { authorization: `Bearer ${who}` };
}

test('every operation, called with what fast-check makes of it, answers as the contract says', async (t) => {
  const statuses = new Map<number, number>();
  const reached = new Set<string>();
  // Each operation on its own, PIXVOTE_FUZZ_RUNS calls each: one picked at random per call gave a bug in one
  // operation a few calls, too few to reach its valid requests (a 500 on an admitted `none` vote went unseen).
  const callOf = (op: Operation) => {
    const pathParams = op.path.match(/\{[^}]+\}/g) ?? [];
    const query = op.params.filter((p) => p.in === 'query').map((p) => p.name);
    const queryValue = (name: string) =>
      fc.oneof(nasty, { arbitrary: fc.constantFrom(...plausibleQuery(name)), weight: 3 });
    const tus = op.path.startsWith('/api/uploads/resumable') ? TUS_HEADERS[op.method] : undefined;
    // Plausible in every part (an id of the kind named, the documented query and body fields, a user's or an
    // admin's credentials): a call fuzzed in each part reaches the operation's own work only when all of them
    // happen to be right together, which 25 calls left to chance for many operations.
    // The caller: an admin on the admin routes, else the user or the admin with what that one owns.
    const caller = fc.constantFrom(...(op.path.startsWith('/api/admin/') ? [1] : [0, 1]));
    const plausibleCall = caller.chain((owner) =>
      fc.record({
        op: fc.constant(op),
        path: fc.tuple(
          ...pathParams.map((p) => {
            const kind = kindOf(op.path, p);
            return OWNED.includes(kind) ? fc.constant(idsOf(kind)[owner]!) : fc.constantFrom(...idsOf(kind));
          }),
        ),
        query: fc
          .uniqueArray(
            fc.oneof(
              fc.constant(null),
              ...query.map((name) => fc.tuple(fc.constant(name), fc.constantFrom(...plausibleQuery(name)))),
            ),
            { maxLength: 4, selector: (q) => q?.[0] },
          )
          .map((q) => q.filter((p) => p !== null)),
        // A tus PATCH's body is its bytes.
        body:
          op.method === 'PATCH' && tus
            ? fc.string({ minLength: 1, maxLength: 20 })
            : op.body
              ? plausibleBody(op)
              : fc.constant(undefined),
        contentType: fc.constant(tus ? OCTETS : 'application/json'),
        who: fc.constant(owner ? 'admin' : 'user'),
        headers: fc.constant(tus ?? []),
      }),
    );
    const fuzzedCall = fc.record({
      op: fc.constant(op),
      // Each parameter mostly an id of the kind it names, sometimes an upload's where it names another kind.
      path: fc.tuple(
        ...pathParams.map((p) =>
          fc.oneof(
            nasty,
            fc.uuid(),
            { arbitrary: fc.constantFrom(...idsOf(kindOf(op.path, p))), weight: 3 },
            fc.constantFrom(...ids),
          ),
        ),
      ),
      query: fc.array(
        fc.oneof(
          fc.tuple(fc.string({ maxLength: 8 }), nasty),
          ...query.map((name) => ({ arbitrary: fc.tuple(fc.constant(name), queryValue(name)), weight: 3 })),
        ),
        { maxLength: 4 },
      ),
      body: body(op),
      contentType: fc.oneof(
        { arbitrary: fc.constant('application/json'), weight: 4 },
        {
          arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', null),
          weight: 1,
        },
        // A tus PATCH's bytes.
        ...(tus ? [{ arbitrary: fc.constant(OCTETS), weight: 4 }] : []),
      ),
      who: credentials(),
      headers: headers(tus),
    });
    return fc.oneof({ arbitrary: fuzzedCall, weight: 2 }, plausibleCall);
  };
  const numRuns = 25 * RUNS;
  for (const [n, op] of operations.entries()) {
    await freshIds(op);
    await fc.assert(
      fc.asyncProperty(callOf(op), async (c) => {
        let i = 0;
        let path = c.op.path.replace(/\{[^}]+\}/g, () => c.path[i++]!);
        const search = c.query.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&');
        if (search) path += `?${search}`;
        const headers: Record<string, string> = { ...Object.fromEntries(c.headers), ...authorization(c.who) };
        if (c.body !== undefined && c.contentType) headers['content-type'] = c.contentType;
        const withBody = c.body !== undefined && c.op.method !== 'GET';
        // As written: a URL would resolve `..` and turn `\` into `/` before the server saw them.
        path = onTheWire(path);
        const res = await readAnswer(
          await raw.request({ path, method: c.op.method, headers, body: withBody ? c.body : null }),
        );
        const text = res.bytes.toString('utf8');
        if (process.env.PIXVOTE_FUZZ_LOG) t.diagnostic(`${c.op.method} ${path} ${c.body} → ${res.status} ${text}`);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status < 400) reached.add(`${c.op.method} ${c.op.path}`);
        const who = c.who ?? 'no credentials';
        const where = `${c.op.method} ${path} (${who}) ${c.body} → ${res.status}: ${text.slice(0, 300)}`;
        answersAsDocumented(c.op.method, `${app.url}${path}`, res.status, res.headers, text, where);
      }),
      { seed: SEED + n, numRuns, endOnFailure: true },
    );
  }
  t.diagnostic(`${operations.length} operations; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  const never = operations.map((o) => `${o.method} ${o.path}`).filter((o) => !reached.has(o));
  t.diagnostic(`answered 2xx/3xx: ${reached.size} operations; never: ${never.join(', ')}`);
});

test('uploads of what fast-check makes: a 201, a 200 duplicate or a 4xx, and nothing left behind', async (t) => {
  const png = await pngImage(64, 48, 5);
  const seeds = [
    png,
    await photoJpeg({ width: 80, height: 60 }),
    await animatedGif({ width: 16, height: 16, frames: 3 }),
  ];
  const bytes = fc.oneof(
    fc.constantFrom(...seeds, hugeHeaderPng(), nonImageBytes(), svgImage(), Buffer.alloc(0)),
    fc.uint8Array({ maxLength: 2000 }).map((b) => Buffer.from(b)),
    // A real image cut short, or with bytes flipped where its headers are.
    fc
      .tuple(
        fc.constantFrom(...seeds),
        fc.nat(),
        fc.array(fc.tuple(fc.nat({ max: 200 }), fc.nat({ max: 255 })), { maxLength: 6 }),
      )
      .map(([img, cut, flips]) => {
        const b = Buffer.from(img.subarray(0, 16 + (cut % img.length)));
        for (const [at, v] of flips) if (at < b.length) b[at] = v;
        return b;
      }),
  );
  // URLs the service must refuse without fetching anything beyond this machine's own refusal.
  const url = fc.oneof(
    fc.constantFrom(
      'http://127.0.0.1/x.png',
      'http://[::1]/x',
      'http://0x7f000001/',
      'http://2130706433/',
      'http://169.254.169.254/latest/meta-data/',
      'http://localhost:1/',
      'file:///etc/passwd',
      'ftp://example.com/x',
      'javascript:alert(1)',
      'data:image/png;base64,iVBORw0KGgo=',
      'https://user:pw@127.0.0.1/',
      'http://[::ffff:127.0.0.1]/',
      'http://127.1/',
      'https://www.youtube.com/watch?v=%00',
      'https://bsky.app/profile/a/post/../../../x',
      'https://open.spotify.com/track/..%2f..%2f',
      'https://example.com/' + 'a'.repeat(3000),
    ),
    nasty,
    fc.webUrl({ withQueryParameters: true, withFragments: true }),
  );
  const field = (name: string, values: fc.Arbitrary<string>) => fc.option(values.map((v) => [name, v] as const));
  const form = fc.record({
    fields: fc.tuple(
      field('upload_type', fc.oneof(fc.constantFrom('image', 'image_url', 'link'), nasty)),
      field('description', fc.oneof(fc.string({ maxLength: 600 }), nasty)),
      field(
        'tags',
        fc.oneof(
          fc.array(fc.oneof(fc.string({ maxLength: 40 }), nasty), { maxLength: 14 }).map((a) => a.join(',')),
          nasty,
        ),
      ),
      field('is_private', fc.oneof(fc.constantFrom('true', 'false'), nasty)),
      field('external_url', url),
      field('image_url', url),
    ),
    file: fc.option(fc.record({ bytes, name: fc.oneof(fc.constantFrom('a.png', '../../x.jpg', 'x.svg', ''), nasty) })),
    who: credentials(),
  });
  const before = await countUploads(app);
  let created = 0;
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(form, async (f) => {
      const data = new FormData();
      for (const pair of f.fields) if (pair) data.append(pair[0], pair[1]);
      if (f.file) data.append('file', new Blob([f.file.bytes]), f.file.name);
      const res = await fetch(`${app.url}/api/v1/upload`, {
        method: 'POST',
        body: data,
        headers: authorization(f.who),
      });
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const sent = `${JSON.stringify(f.fields)} ${f.file ? `${f.file.bytes.length} bytes` : 'no file'}`;
      const where = `${sent} → ${res.status}: ${text.slice(0, 300)}`;
      assert.ok([200, 201].includes(res.status) || (res.status >= 400 && res.status < 500), where);
      answersAsDocumented('POST', res.url, res.status, res.headers, text, where);
      if (res.status === 201) created++;
    }),
    {
      seed: SEED,
      numRuns: 150 * RUNS,
      endOnFailure: true,
    },
  );
  t.diagnostic(`uploads: statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  // Every row is an upload that was answered 201 (or a fuzzed delete took one of ours); no staged or temp file left.
  const after = await countUploads(app);
  assert.ok(after <= before + created && after >= before + created - ids.length, `${before} + ${created} → ${after}`);
  const left = await diskState(app);
  assert.deepEqual([...left.staging, ...left.tmp], [], 'no staged or temp file left');
});

test('the pages, at what fast-check makes of their paths: never a 500, never a redirect off the site', async (t) => {
  const segment = fc.oneof(
    nasty,
    fc.constantFrom(...ids, user.username, 'cats', '%2F%2Fevil.example', '\\evil.example'),
  );
  const page = fc.oneof(
    fc
      .tuple(
        fc.constantFrom(
          '/',
          '/new',
          '/uploads/',
          '/u/',
          '/signin',
          '/signup',
          '/profile',
          '/moderation',
          '/modlog',
          '/tags/',
          '/assets/',
        ),
        segment,
      )
      .map(([p, s]) => (p.endsWith('/') && p !== '/' ? p + s : p)),
    fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => `/${s.join('/')}`),
    fc.constantFrom(
      '//evil.example/',
      '/\\evil.example',
      '/./uploads/../signin',
      '/uploads/%2e%2e/%2e%2e/api/uploads',
      '/%2F%2Fevil.example',
    ),
  );
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(
      page,
      fc.array(fc.tuple(fc.constantFrom('next', 'return_to', 'page', 'sort', 'cursor', 'tag', 'x'), nasty), {
        maxLength: 3,
      }),
      fc.constantFrom<string | null>(null, 'auth-token=garbage', 'auth-token=', `auth-token=${user.token}`, 'a=b; c'),
      async (path, query, cookie) => {
        const search = query.map(([k, v]) => `${k}=${v}`).join('&');
        const target = onTheWire(search ? `${path}?${search}` : path);
        // The path as written (a URL would resolve its dot segments and turn a backslash into a slash first).
        const res = await readAnswer(
          await raw.request({ path: target, method: 'GET', headers: cookie ? { cookie } : {} }),
        );
        const text = res.bytes.toString('utf8');
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const where = `GET ${target} → ${res.status}: ${text.slice(0, 200)}`;
        assert.ok(res.status < 500, where);
        for (const leak of LEAKS.slice(0, 2)) assert.doesNotMatch(text, leak, where);
        const location = res.headers.get('location');
        if (location !== null) {
          // Relative to this site: one leading slash, no scheme, no host (after the browser's own normalization).
          const resolved = new URL(location, app.url);
          assert.equal(resolved.origin, app.url, `redirect off the site: ${where} Location: ${location}`);
        }
      },
    ),
    {
      seed: SEED,
      numRuns: 200 * RUNS,
      endOnFailure: true,
    },
  );
  t.diagnostic(`pages: statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
});
