#!/usr/bin/env node
// A stranger's first minute against a running pixvote, through the public API only:
//   node scripts/smoke.mjs http://127.0.0.1:3000
// /healthz answers, an account registers, an API token is made, an image (a PNG made here, no files needed)
// uploads with 201 and can be read back. Exits 1 naming the step that failed. Plain JavaScript (no
// dependency), so it runs with any Node ≥ 18, inside or outside the container image.
import { deflateSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';

const base = (process.argv[2] ?? 'http://127.0.0.1:3000').replace(/\/$/, '');

async function step(name, fn) {
  try {
    const out = await fn();
    console.log(`ok   ${name}`);
    return out;
  } catch (e) {
    console.error(`FAIL ${name}: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}

async function call(path, init, expected) {
  const res = await fetch(base + path, { ...init, signal: AbortSignal.timeout(60_000) });
  const text = await res.text();
  if (res.status !== expected) throw new Error(`${init?.method ?? 'GET'} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

/** A 96×64 RGB PNG of random colour blocks: valid, unique per run, people-free. */
function png() {
  const [w, h] = [96, 64];
  const colours = randomBytes(6 * 4 * 3);
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    raw[y * (w * 3 + 1)] = 0;
    for (let x = 0; x < w; x++) {
      const block = (Math.floor(y / 16) * 6 + Math.floor(x / 16)) * 3;
      colours.copy(raw, y * (w * 3 + 1) + 1 + x * 3, block, block + 3);
    }
  }
  const chunk = (type, data) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function crc32(buf) {
  let c = ~0;
  for (const byte of buf) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

const json = { 'content-type': 'application/json' };
await step('GET /healthz', () => call('/healthz', {}, 200));
const user = `smoke${randomBytes(4).toString('hex')}`;
const { token: jwt } = await step('register', () =>
  call(
    '/api/auth',
    {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        action: 'register',
        email: `${user}@example.com`,
        username: user,
        password: 'correct horse battery',
      }),
    },
    201,
  ),
);
const { token } = await step('API token', () =>
  call(
    '/api/auth/tokens/generate',
    { method: 'POST', headers: { ...json, authorization: `Bearer ${jwt}` }, body: JSON.stringify({ name: 'smoke' }) },
    201,
  ),
);
const form = new FormData();
form.set('upload_type', 'image');
form.set('file', new Blob([png()], { type: 'image/png' }), 'smoke.png');
const upload = await step('upload an image (201)', () =>
  call('/api/v1/upload', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }, 201),
);
await step('read it back', () => call(`/api/upload/${upload.id}`, {}, 200));
