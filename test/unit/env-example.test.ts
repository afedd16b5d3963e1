/**
 * .env.example lists every variable the server reads (and every one API.md's Configuration table names), each
 * with one comment line, and the values it sets are the real defaults.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// ../shared/API.md next to the checkout (or next to the folder of worktrees it is in).
const API_MD = ['../../../shared/API.md', '../../../../shared/API.md']
  .map((p) => fileURLToPath(new URL(p, import.meta.url)))
  .find((p) => existsSync(p));
const LATER_HEADING = /^# --- Coming with /;

/**
 * The variables of API.md's "Configuration (environment)" table and "Rate limits" section, kept here because a
 * clean clone (CI) has no ../shared; when API.md is there, a test below checks this list against it.
 */
const API_MD_VARIABLES = [
  'PORT',
  'HOST',
  'DATA_DIR',
  'MEDIA_STORE',
  'MEDIA_REDIRECT',
  'DATABASE_URL',
  'REDIS_URL',
  'JWT_SECRET',
  'JWT_TTL',
  'WORKERS',
  'WORKER_QUEUE',
  'HUMAN_POLICY',
  'HUMAN_THRESHOLD',
  'NEAR_DUPLICATE_DISTANCE',
  'FETCH_ALLOW_PRIVATE',
  'FETCH_TIMEOUT_MS',
  'ADMIN_USERNAMES',
  'RATE_LIMIT_AUTH',
  'RATE_LIMIT_UPLOAD',
  'RATE_LIMIT_VOTE',
  'RATE_LIMIT_GENERAL',
  'RATE_LIMIT_MEDIA',
  'TRUST_PROXY',
  'LOG_LEVEL',
  'RATE_LIMIT_REPORT',
  'METRICS_TOKEN',
  'REPORT_HOLD_THRESHOLD',
  'BLOCKLIST_DISTANCE',
  'NODE_ENV',
  // API.md's, for the open issues; commented out under "Coming with …" in .env.example until they are read.
  'HUMAN_REVIEW_THRESHOLD',
  'BLOCKLIST_PDQ_DISTANCE',
  'VOTE_MIN_ACCOUNT_AGE',
  'REPORT_MIN_ACCOUNT_AGE',
  'MAX_CONNECTIONS_PER_IP',
];
/** Read by something else than src/config.ts: glibc (set by npm start and the Dockerfile). */
const NOT_CONFIG = new Set(['MALLOC_ARENA_MAX']);

interface Entry {
  name: string;
  value: string;
  /** false: commented out (unset by default, or not read yet). */
  active: boolean;
  later: boolean;
  comment: string;
  line: number;
}

function parseEnvExample(): Entry[] {
  const lines = readFileSync(`${ROOT}/.env.example`, 'utf8').split('\n');
  const entries: Entry[] = [];
  let later = false;
  lines.forEach((text, i) => {
    if (LATER_HEADING.test(text)) later = true;
    const m = /^(# )?([A-Z][A-Z0-9_]*)=(.*)$/.exec(text);
    if (!m) return;
    const above = lines[i - 1] ?? '';
    const comment = above.startsWith('# ') && !/^# [A-Z][A-Z0-9_]*=/.test(above) ? above.slice(2) : '';
    entries.push({ name: m[2]!, value: m[3]!, active: !m[1], later, comment, line: i + 1 });
  });
  return entries;
}

/** The variables loadConfig() reads, observed rather than copied: it gets an environment that records reads. */
function variablesConfigReads(): Set<string> {
  const read = new Set<string>();
  const env = new Proxy<NodeJS.ProcessEnv>(
    { JWT_SECRET: 'x'.repeat(48) },
    {
      get(target, key) {
        if (typeof key === 'string') read.add(key);
        return target[key as string];
      },
    },
  );
  loadConfig(env);
  return read;
}

test('.env.example lists every variable src/config.ts reads, once, each with its own comment line', () => {
  const entries = parseEnvExample();
  const names = entries.map((e) => e.name);
  const read = variablesConfigReads();
  assert.ok(read.size >= 25, `loadConfig read ${read.size} variables`);
  for (const name of read) {
    assert.ok(names.includes(name), `${name} (read by src/config.ts) is missing from .env.example`);
  }
  assert.deepEqual(
    names.filter((n, i) => names.indexOf(n) !== i),
    [],
    'no variable listed twice',
  );
  for (const e of entries) {
    assert.ok(e.comment.length > 0, `.env.example:${e.line} ${e.name} has a comment line above it`);
  }
});

test('.env.example lists every API.md variable; those not read yet are commented out under "coming"', () => {
  const entries = parseEnvExample();
  const read = variablesConfigReads();
  for (const name of API_MD_VARIABLES) {
    const e = entries.find((x) => x.name === name);
    assert.ok(e, `${name} (API.md "Configuration") is missing from .env.example`);
    if (!read.has(name)) {
      assert.ok(e.later && !e.active, `${name} is not read yet: it belongs, commented out, under "Coming with …"`);
    }
  }
  // Nothing stale above the "coming" section: each variable there is one the server (or glibc) reads.
  for (const e of entries.filter((x) => !x.later)) {
    assert.ok(read.has(e.name) || NOT_CONFIG.has(e.name), `.env.example:${e.line} ${e.name} is read by nothing`);
  }
});

test('the values .env.example sets are the defaults: loading them changes nothing', () => {
  const active = parseEnvExample().filter((e) => e.active && !NOT_CONFIG.has(e.name));
  assert.ok(active.length >= 20);
  const secret = { JWT_SECRET: 'y'.repeat(48) };
  const fromFile = loadConfig({ ...Object.fromEntries(active.map((e) => [e.name, e.value])), ...secret });
  assert.deepEqual(fromFile, loadConfig(secret));
  // And MALLOC_ARENA_MAX's is the one npm start sets.
  const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { scripts: { start: string } };
  const start = pkg.scripts.start;
  const arenas = parseEnvExample().find((e) => e.name === 'MALLOC_ARENA_MAX');
  assert.ok(start.includes(`MALLOC_ARENA_MAX=\${MALLOC_ARENA_MAX:-${arenas?.value}}`), start);
});

test("the list of API.md variables in this test is still API.md's", (t) => {
  if (!API_MD) {
    t.skip('../shared/API.md is not next to the checkout (a clean clone): the list kept in this test is used alone');
    return;
  }
  const md = readFileSync(API_MD, 'utf8');
  const table = /## Configuration \(environment\)\n([\s\S]*?)(\n## |$)/.exec(md)?.[1] ?? '';
  const rateLimits = /## Rate limits\n([\s\S]*?)\n## /.exec(md)?.[1] ?? '';
  const names = new Set<string>();
  for (const row of table.split('\n').filter((l) => l.startsWith('| `'))) {
    const first = row.split('|')[1]!;
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(m[1]!);
  }
  for (const m of rateLimits.matchAll(/`([A-Z][A-Z0-9_]*)(=[^`]*)?`/g)) names.add(m[1]!);
  names.add('NODE_ENV'); // named in JWT_SECRET's row ("required when NODE_ENV=production")
  assert.ok(names.size >= 25, `read ${names.size} variables from API.md`);
  assert.deepEqual([...names].sort(), [...API_MD_VARIABLES].sort());
});
