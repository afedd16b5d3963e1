/**
 * A client generated from the served document is a good client: openapi-typescript turns GET /api/openapi.json
 * into types, a small client written against those types (register, log in, API token, multipart upload of a
 * file, vote, list) type-checks with the project's TypeScript, the mistakes a client must not be able to make do
 * not (`@ts-expect-error` lines: an unused one is an error), and the same client then runs against the app.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startApp, type TestApp } from '../support/app.ts';
import { pngImage } from '../support/fixtures.ts';
import { generateTypes } from '../support/openapi-typegen/index.ts';
import { onPostgres } from '../support/env.ts';

// The compiler `npm run typecheck` runs (`typescript7`, an alias of TypeScript 7; `typescript` is TS 6 for ESLint).
const TSC = fileURLToPath(new URL('../../node_modules/typescript7/bin/tsc', import.meta.url));

const TSCONFIG = {
  compilerOptions: {
    target: 'es2023',
    lib: ['es2023', 'dom'],
    module: 'nodenext',
    moduleResolution: 'nodenext',
    types: [],
    strict: true,
    noUncheckedIndexedAccess: true,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    erasableSyntaxOnly: true,
    noEmit: true,
    skipLibCheck: false,
  },
  files: ['schema.ts', 'client.ts'],
};

/**
 * The client, written only against the generated `paths` and `components`. Plain fetch; the multipart body is a
 * FormData built from the generated form type's own field names, with the file as a Blob.
 */
const CLIENT = `
import type { components, paths } from './schema.ts';

type JsonBody<Op> = Op extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
type FormBody<Op> = Op extends { requestBody: { content: { 'multipart/form-data': infer B } } } ? B : never;
type JsonOf<Op, S extends number> = Op extends { responses: { [K in S]: { content: { 'application/json': infer R } } } }
  ? R
  : never;
type QueryOf<Op> = Op extends { parameters: { query?: infer Q } } ? Q : never;

type AuthOp = paths['/api/auth']['post'];
type UploadOp = paths['/api/v1/upload']['post'];
export type AuthBody = JsonBody<AuthOp>;
export type TokenBody = JsonBody<paths['/api/auth/tokens/generate']['post']>;
export type UploadJson = JsonBody<UploadOp>;
export type UploadForm = FormBody<UploadOp>;
export type VoteBody = JsonBody<paths['/api/vote']['post']>;
export type ListQuery = QueryOf<paths['/api/uploads']['get']>;
type Session = components['schemas']['Session'];

/** The multipart form as a client sends it: the document's field names, the file as a Blob. */
export type UploadFormFields = { [K in keyof UploadForm]: K extends 'file' ? Blob : UploadForm[K] };

export function formData(fields: UploadFormFields): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields) as Array<[string, unknown]>) {
    if (value === undefined) continue;
    if (value instanceof Blob) form.append(name, value, 'miso.png');
    else if (Array.isArray(value)) for (const v of value) form.append(name, String(v));
    else form.append(name, String(value));
  }
  return form;
}

/** Which way a login names the user: the login alternative is a typed union, narrowed by its fields. */
export function who(body: AuthBody): string {
  if (body.action === 'register') return body.username;
  if (body.action === 'logout') return '(logout)';
  return 'email' in body ? body.email : body.username;
}

interface Reply<T> {
  status: number;
  body: T;
}

async function send<T>(base: string, path: string, init: RequestInit & { bearer?: string }): Promise<Reply<T>> {
  const headers = new Headers(init.headers);
  if (init.bearer) headers.set('authorization', 'Bearer ' + init.bearer);
  const r = await fetch(base + path, { ...init, headers });
  return { status: r.status, body: (await r.json()) as T };
}

const json = <B>(body: B, bearer?: string): RequestInit & { bearer?: string } => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
  ...(bearer ? { bearer } : {}),
});

export async function scenario(base: string, image: Blob, name: string) {
  const email = name + '@example.com';
  const password = 'correct-horse-battery';
  const registration = json<AuthBody>({ action: 'register', email, username: name, password });
  const registered = await send<JsonOf<AuthOp, 201>>(base, '/api/auth', registration);
  // Logging in by username alone, and by email alone: both are typed alternatives.
  const byName = await send<Session>(base, '/api/auth', json<AuthBody>({ action: 'login', username: name, password }));
  const byEmail = await send<Session>(base, '/api/auth', json<AuthBody>({ action: 'login', email, password }));
  const jwt: string = byName.body.token;

  const token = await send<JsonOf<paths['/api/auth/tokens/generate']['post'], 201>>(
    base,
    '/api/auth/tokens/generate',
    json<TokenBody>({ name: 'ci uploader' }, jwt),
  );
  const apiToken: string = token.body.token;

  // No is_private, no description: both have defaults, so a client may leave them out.
  const form = formData({ upload_type: 'image', file: image, tags: 'cats, cute' });
  const uploaded = await send<JsonOf<UploadOp, 201>>(base, '/api/v1/upload', {
    method: 'POST',
    body: form,
    bearer: apiToken,
  });
  const link = await send<JsonOf<UploadOp, 201>>(
    base,
    '/api/v1/upload',
    json<UploadJson>({ upload_type: 'link', external_url: 'https://www.youtube.com/watch?v=J---aiyznGQ' }, apiToken),
  );

  const vote = await send<JsonOf<paths['/api/vote']['post'], 200>>(
    base,
    '/api/vote',
    json<VoteBody>({ uploadId: uploaded.body.id, vote: 'fucks' }, apiToken),
  );

  const query: ListQuery = { sort: 'new', limit: 10, user: name };
  const params = new URLSearchParams(Object.entries(query ?? {}).map(([k, v]) => [k, String(v)]));
  const list = await send<JsonOf<paths['/api/uploads']['get'], 200>>(base, '/api/uploads?' + params.toString(), {});
  const isPrivate: boolean[] = list.body.uploads.map((u) => u.is_private);

  return {
    statuses: [registered, byName, byEmail, token, uploaded, link, vote, list].map((r) => r.status),
    username: registered.body.user.username,
    uploadedTags: uploaded.body.tags.map((t) => t.name),
    uploadedPrivate: uploaded.body.is_private,
    upvotes: vote.body.upvotes,
    listed: list.body.uploads.map((u) => u.id),
    isPrivate,
    ids: [uploaded.body.id, link.body.id],
  };
}

// What the types must refuse (each line below is an error; if one were not, tsc reports the unused directive).
// @ts-expect-error an action the API does not have
export const dance: AuthBody = { action: 'dance' };
// @ts-expect-error a login names the user, by email or by username
export const nobody: AuthBody = { action: 'login', password: 'correct-horse-battery' };
// @ts-expect-error a login has a password
export const noPassword: AuthBody = { action: 'login', username: 'ada_lovelace' };
// @ts-expect-error register needs a username too
export const halfRegistered: AuthBody = { action: 'register', email: 'ada@example.com', password: 'horse-battery' };
// @ts-expect-error upload_type is required
export const untyped: UploadJson = { external_url: 'https://www.youtube.com/watch?v=J---aiyznGQ' };
// @ts-expect-error the form's fields are the document's: there is no "image" field
export const misnamed: UploadFormFields = { upload_type: 'image', image: new Blob([]) };
// @ts-expect-error a vote is fucks, does_not_fuck or none
export const maybe: VoteBody = { uploadId: '3f2b8c1e-9a4d-4e7b-8f0a-6c5d2e1b7a90', vote: 'maybe' };
// @ts-expect-error sort is new, top, hot or best
export const shuffled: ListQuery = { sort: 'random' };
`;

let app: TestApp;
let dir: string;
before(async () => {
  app = await startApp();
  dir = await mkdtemp(join(tmpdir(), 'pixvote-openapi-client-'));
});
after(async () => {
  await app.close();
  await rm(dir, { recursive: true, force: true });
});

/** Generates types from a document into `into`, writes the client beside them, and type-checks both. */
async function typeCheck(document: object, into: string): Promise<{ ok: boolean; output: string; types: string }> {
  const types = await generateTypes(document);
  await writeFile(join(into, 'schema.ts'), types);
  await writeFile(join(into, 'client.ts'), CLIENT);
  await writeFile(join(into, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  await writeFile(join(into, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  // Asynchronously: a synchronous spawn would freeze this process, the app's server with it, for the whole type
  // check, and the server's keep-alive timer and the client's next request on that socket would then race (the
  // request met a socket the server was closing: ECONNRESET).
  const r = await new Promise<{ code: number; out: string }>((done) => {
    execFile(process.execPath, [TSC, '-p', join(into, 'tsconfig.json')], { cwd: into }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
  return { ok: r.code === 0, output: r.out, types };
}

async function servedDocument(): Promise<Record<string, any>> {
  const r = await app.api.get('/api/openapi.json');
  assert.equal(r.status, 200);
  return r.body;
}

// The document and its generated types are the same on every database: type-checked once, in the SQLite pass.
const sameOnEveryDatabase = { skip: onPostgres && 'the document is the same on every database (SQLite pass)' };

test(
  'types openapi-typescript generates from the served document type-check the client',
  sameOnEveryDatabase,
  async () => {
    const { ok, output, types } = await typeCheck(await servedDocument(), dir);
    assert.ok(ok, `tsc:\n${output}`);
    // The login alternative is a union of two typed objects (it was `{…} | unknown | unknown`, i.e. unknown).
    const login = types.slice(types.indexOf('        LoginRequest: '), types.indexOf('        LoginWithEmail: '));
    const alternatives = 'components["schemas"]["LoginWithEmail"] | components["schemas"]["LoginWithUsername"]';
    assert.ok(login.includes(`} & (${alternatives});`), login);
  },
);

test(
  'the type check catches a document whose is_private is required or whose login is untyped',
  sameOnEveryDatabase,
  async () => {
    const doc = await servedDocument();
    const required = structuredClone(doc);
    for (const name of ['UploadForm', 'UploadJson']) required.components.schemas[name].required.push('is_private');
    const withRequired = await mkdtemp(join(dir, 'required-'));
    const a = await typeCheck(required, withRequired);
    assert.equal(a.ok, false);
    assert.match(a.output, /is_private/);

    const untyped = structuredClone(doc);
    untyped.components.schemas.LoginRequest = { description: 'anything' };
    delete untyped.components.schemas.AuthRequest.discriminator;
    const withUntyped = await mkdtemp(join(dir, 'untyped-'));
    const b = await typeCheck(untyped, withUntyped);
    assert.equal(b.ok, false);
    assert.match(b.output, /TS2578/, 'the @ts-expect-error lines about logins go unused');
  },
);

test('the same client runs against the app: register, log in both ways, token, upload a file, vote, list', async () => {
  await typeCheck(await servedDocument(), dir);
  const client = (await import(pathToFileURL(join(dir, 'client.ts')).href)) as {
    scenario(base: string, image: Blob, name: string): Promise<Record<string, any>>;
  };
  const png = await pngImage(64, 48, 7);
  const out = await client.scenario(app.url, new Blob([new Uint8Array(png)], { type: 'image/png' }), 'typed_client');
  assert.deepEqual(out.statuses, [201, 200, 200, 201, 201, 201, 200, 200]);
  assert.equal(out.username, 'typed_client');
  assert.deepEqual(out.uploadedTags.sort(), ['cats', 'cute']);
  assert.equal(out.uploadedPrivate, false, 'is_private left out is false');
  assert.equal(out.upvotes, 1);
  assert.deepEqual(out.listed.sort(), [...out.ids].sort());
});
