/**
 * `pixvote mod`: the blocklist files (CSV and JSON, checked line by line), the command line, the tables, and the
 * import's requests against a fake server (the real one is driven by test/http/cli-mod.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkEntry,
  chunkEntries,
  formatBlocklist,
  formatOf,
  parseBlocklist,
  parseCsv,
  type BlocklistEntry,
} from '../../src/cli/blocklist-file.ts';
import { entriesLine, readEntries, runExport, runImport } from '../../src/cli/blocklist.command.ts';
import { parseModArgs } from '../../src/cli/mod-args.ts';
import { formatAge, personCell, renderJobs, renderModlog, renderQueue, topReasons } from '../../src/cli/mod-tables.ts';
import { ApiClient } from '../../src/cli/api.client.ts';
import { runMod } from '../../src/cli/mod.command.ts';
import { CliError } from '../../src/cli/cli-config.store.ts';

const SHA = (c: string) => c.repeat(64);
const PH = (c: string) => c.repeat(16);

test('CSV: reasons with commas, quotes, line breaks and edge spaces survive a round trip', () => {
  const entries: BlocklistEntry[] = [
    { sha256: SHA('a'), phash: PH('b'), reason: 'spam, again' },
    { sha256: SHA('c'), phash: null, reason: 'the "worst" one' },
    { sha256: null, phash: PH('d'), reason: 'two\nlines' },
    { sha256: SHA('e'), phash: null, reason: null },
  ];
  const csv = formatBlocklist(entries, 'csv');
  assert.equal(
    csv,
    'sha256,phash,reason\n' +
      `${SHA('a')},${PH('b')},"spam, again"\n` +
      `${SHA('c')},,"the ""worst"" one"\n` +
      `,${PH('d')},"two\nlines"\n` +
      `${SHA('e')},,\n`,
  );
  const back = parseBlocklist(csv, 'csv');
  assert.deepEqual(back.errors, []);
  assert.deepEqual(
    back.entries.map((e) => e.entry),
    entries,
  );
  assert.deepEqual(
    back.entries.map((e) => e.line),
    [2, 3, 4, 6],
    'the line each record starts on',
  );
  const json = parseBlocklist(formatBlocklist(entries, 'json'), 'json');
  assert.deepEqual(
    json.entries.map((e) => e.entry),
    entries,
  );
});

test('CSV parsing: CRLF, a BOM, blank lines, columns in any order, uppercase hex', () => {
  assert.deepEqual(parseCsv('\uFEFFa,b\r\n\r\n"x,""y""",z\r\n').records, [
    { line: 1, fields: ['a', 'b'] },
    { line: 3, fields: ['x,"y"', 'z'] },
  ]);
  const r = parseBlocklist(`reason,phash\r\nold,${PH('A')}\r\n`, 'csv');
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.entries, [{ line: 2, entry: { sha256: null, phash: PH('a'), reason: 'old' } }]);
});

test('CSV: every bad line is reported with its line number', () => {
  const text = [
    'sha256,phash,reason',
    `${SHA('a')},,fine`,
    `${SHA('a').slice(1)},,short sha`,
    `,${PH('g')},not hex`,
    ',,neither',
    '"multi',
    'line reason",x',
    `${SHA('b')},${PH('c')}`,
    `${SHA('b')},${PH('c')},"unclosed`,
  ].join('\n');
  const r = parseBlocklist(text, 'csv');
  assert.deepEqual(r.errors, [{ line: 9, message: 'a quoted field is never closed' }]);
  const closed = parseBlocklist(text.slice(0, text.lastIndexOf('\n')), 'csv');
  assert.deepEqual(
    closed.errors.map((e) => e.line),
    [3, 4, 5, 6, 8],
  );
  assert.match(closed.errors[0]!.message, /^sha256 "a{63}" is not 64 hex digits$/);
  assert.match(closed.errors[1]!.message, /^phash "g{16}" is not 16 hex digits$/);
  assert.match(closed.errors[2]!.message, /at least one/);
  assert.match(closed.errors[3]!.message, /^2 fields; the header has 3$/);
  assert.equal(closed.entries.length, 1);
  assert.deepEqual(parseBlocklist(`${SHA('a')},,x\n`, 'csv').errors, [
    {
      line: 1,
      message:
        'the first line must be the header sha256,phash,reason ' +
        "(or hma-csv's collab,signal_type,signal_str,category,tags)",
    },
  ]);
});

test('JSON: an array or {"entries": [...]}; bad entries are reported with the line they start on', () => {
  const good = [{ sha256: SHA('A'), reason: 'x', source: 'import' }, { phash: PH('1') }];
  for (const doc of [good, { entries: good }]) {
    const r = parseBlocklist(JSON.stringify(doc), 'json');
    assert.deepEqual(r.errors, []);
    assert.deepEqual(
      r.entries.map((e) => e.entry),
      [
        { sha256: SHA('a'), phash: null, reason: 'x' },
        { sha256: null, phash: PH('1'), reason: null },
      ],
    );
  }
  const text = `{
  "note": "[not the list]",
  "entries": [
    {"sha256": "${SHA('a')}"},
    {"sha256": "nope",
     "reason": "a \\"quoted\\" ] bracket"},
    "just a string",
    {"phash": 12}
  ]
}`;
  const r = parseBlocklist(text, 'json');
  assert.deepEqual(r.errors, [
    { line: 5, message: 'entry 2: sha256 "nope" is not 64 hex digits' },
    { line: 7, message: 'entry 3 is not an object' },
    { line: 8, message: 'entry 4: phash must be a string' },
  ]);
  const broken = parseBlocklist('[\n{"phash": "0000000000000000"}\n{}]', 'json');
  assert.equal(broken.errors.length, 1);
  assert.equal(broken.errors[0]!.line, 3);
  assert.match(broken.errors[0]!.message, /^not valid JSON/);
  assert.deepEqual(parseBlocklist('{"items": []}', 'json').errors, [
    { line: 1, message: 'expected an array of entries or {"entries": [...]}' },
  ]);
});

test("hma-csv: python-threatexchange's dataset CSV; pdq rows become entries, other types are counted", () => {
  const pdq = (c: string) => c.repeat(64);
  // As `threatexchange dataset -P --csv` prints it (csv.DictWriter: CRLF line ends).
  const te =
    'collab,signal_type,signal_str,category,tags\r\n' +
    `Sample Data,pdq,${pdq('A')},POSITIVE_CLASS,media_priority_s1 sample\r\n` +
    'Sample Data,video_md5,d41d8cd98f00b204e9800998ecf8427e,POSITIVE_CLASS,\r\n' +
    `Sample Data,pdq,${pdq('b')},POSITIVE_CLASS,\r\n` +
    'Sample Data,url,https://example.com/,POSITIVE_CLASS,\r\n' +
    'Sample Data,pdq,f00d,POSITIVE_CLASS,\r\n';
  for (const format of ['csv', 'hma-csv'] as const) {
    const parsed = parseBlocklist(te, format);
    assert.deepEqual(parsed.errors, [{ line: 6, message: 'pdq "f00d" is not 64 hex digits' }]);
    assert.deepEqual(
      parsed.entries.map((e) => e.entry),
      [
        { sha256: null, phash: null, pdq: pdq('a'), reason: 'media_priority_s1 sample' },
        { sha256: null, phash: null, pdq: pdq('b'), reason: 'Sample Data' },
      ],
    );
    assert.deepEqual(parsed.otherSignals, { video_md5: 1, url: 1 });
  }
  assert.match(parseBlocklist('sha256,phash,reason\n', 'hma-csv').errors[0]!.message, /collab,signal_type/);

  // Written back: PDQ entries only, in the same columns; read again, the same entries.
  const entries: BlocklistEntry[] = [
    { sha256: null, phash: null, pdq: pdq('c'), reason: 'spam, ring' },
    { sha256: SHA('d'), phash: PH('e'), pdq: pdq('f'), reason: null },
    { sha256: SHA('1'), phash: null, reason: 'no pdq: not in hma-csv' },
  ];
  const hma = formatBlocklist(entries, 'hma-csv');
  assert.equal(
    hma,
    'collab,signal_type,signal_str,category,tags\n' +
      `pixvote,pdq,${pdq('c')},POSITIVE_CLASS,"spam, ring"\n` +
      `pixvote,pdq,${pdq('f')},POSITIVE_CLASS,\n`,
  );
  assert.deepEqual(
    parseBlocklist(hma, 'csv').entries.map((e) => e.entry),
    [
      { sha256: null, phash: null, pdq: pdq('c'), reason: 'spam, ring' },
      { sha256: null, phash: null, pdq: pdq('f'), reason: 'pixvote' },
    ],
  );
  // The plain CSV gains a last column pdq only when an entry has one; it round-trips.
  const csv = formatBlocklist(entries, 'csv');
  assert.match(csv, /^sha256,phash,reason,pdq\n/);
  assert.deepEqual(
    parseBlocklist(csv, 'csv').entries.map((e) => e.entry),
    entries,
  );
  assert.deepEqual(
    parseBlocklist(formatBlocklist(entries, 'json'), 'json').entries.map((e) => e.entry),
    entries,
  );
  assert.equal(formatOf('list.csv', 'hma-csv'), 'hma-csv');
});

test('an entry needs a 64-hex sha256 or a 16-hex phash; hashes are lowercased and trimmed', () => {
  assert.deepEqual(checkEntry(` ${SHA('F')} `, '', ''), { sha256: SHA('f'), phash: null, reason: null });
  assert.equal(checkEntry('', '', 'why'), 'neither sha256, phash nor pdq: an entry needs at least one');
  assert.equal(checkEntry(null, undefined, null), 'neither sha256, phash nor pdq: an entry needs at least one');
  assert.equal(checkEntry(SHA('a'), null, 5), 'reason must be a string');
});

test('the format is the extension unless --format says', () => {
  assert.equal(formatOf('list.CSV'), 'csv');
  assert.equal(formatOf('list.json'), 'json');
  assert.equal(formatOf('list.txt', 'json'), 'json');
  assert.throws(() => formatOf('list.txt'), /--format csv or --format json/);
  assert.throws(() => formatOf('list.csv', 'xml'), /--format must be csv, json or hma-csv/);
});

test('chunks hold at most 10 000 entries and stay under the body limit', () => {
  const items = Array.from({ length: 25_001 }, (_, i) => i);
  assert.deepEqual(
    chunkEntries(items, () => 10).map((c) => c.length),
    [10_000, 10_000, 5_001],
  );
  const bySize = chunkEntries(items.slice(0, 10_000), () => 149);
  assert.deepEqual(
    bySize.map((c) => c.length),
    [6_666, 3_334],
    '150 bytes each: 6 666 fit in 1 000 000',
  );
  assert.deepEqual(
    chunkEntries([], () => 1),
    [],
  );
});

test('pixvote mod arguments: each subcommand, its defaults, and usage errors', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  const id = '0b0e8a4e-6f8e-4c1a-9d3e-2f1a5b6c7d8e';
  const req = (args: string[]) => parseModArgs(args, now).request;
  assert.deepEqual(req(['queue']), { kind: 'queue', status: 'open', page: 1, limit: null, json: false });
  assert.deepEqual(req(['queue', '--status', 'closed', '--page', '3', '--limit', '20', '--json']), {
    kind: 'queue',
    status: 'closed',
    page: 3,
    limit: 20,
    json: true,
  });
  assert.deepEqual(req(['remove', id, '--block', 'near', '--reason', ' spam ']), {
    kind: 'decide',
    action: 'remove',
    id,
    reason: 'spam',
    block: 'near',
  });
  assert.deepEqual(req(['ban', 'Ada', '--days', '7', '--reason', 'r', '--remove-uploads']), {
    kind: 'ban',
    user: 'Ada',
    reason: 'r',
    until: '2030-01-08T00:00:00.000Z',
    removeUploads: true,
  });
  assert.equal(
    (req(['ban', 'ada', '--until', '2030-02-01T12:00:00+01:00', '--reason', 'r']) as any).until,
    '2030-02-01T11:00:00.000Z',
  );
  assert.equal((req(['ban', 'ada', '--reason', 'r']) as any).until, null, 'permanent');
  assert.deepEqual(req(['unban', 'ada']), { kind: 'unban', user: 'ada' });
  assert.deepEqual(req(['blocklist', 'import', 'x.txt', '--format', 'json', '--dry-run', '--reason', 'list']), {
    kind: 'import',
    file: 'x.txt',
    format: 'json',
    dryRun: true,
    reason: 'list',
  });
  assert.deepEqual(req(['blocklist', 'export', 'out.csv']), { kind: 'export', file: 'out.csv', format: 'csv' });
  assert.deepEqual(req(['modlog', '--page', '2']), { kind: 'modlog', page: 2, limit: null, json: false });
  assert.deepEqual(req(['ring', 'void', id, '--reason', ' boosting ']), {
    kind: 'ring',
    action: 'void',
    id,
    reason: 'boosting',
  });
  assert.deepEqual(req(['ring', 'dismiss', id]), { kind: 'ring', action: 'dismiss', id, reason: '' });
  assert.deepEqual(req(['ring', 'restore', id, '--reason', 'fans']), {
    kind: 'ring',
    action: 'restore',
    id,
    reason: 'fans',
  });
  assert.deepEqual(req(['jobs']), { kind: 'jobs', status: null, page: 1, limit: null, json: false });
  assert.deepEqual(req(['jobs', '--status', 'running', '--limit', '5', '--json']), {
    kind: 'jobs',
    status: 'running',
    page: 1,
    limit: 5,
    json: true,
  });
  assert.deepEqual(req(['--help']), { kind: 'help' });
  assert.deepEqual(parseModArgs(['queue', '--url', 'http://x', '--token', 't']).target, {
    url: 'http://x',
    token: 't',
  });

  const usage = (args: string[], message: RegExp) =>
    assert.throws(
      () => parseModArgs(args, now),
      (e: unknown) => e instanceof CliError && e.exitCode === 2 && message.test(e.message),
      args.join(' '),
    );
  usage([], /which subcommand/);
  usage(['frob'], /unknown subcommand "frob"/);
  usage(['blocklist'], /blocklist takes import FILE or export FILE/);
  usage(['ring', 'ban', id], /ring takes void ID, dismiss ID or restore ID/);
  usage(['ring', 'void', 'x'], /not a vote-ring id/);
  usage(['ring', 'void', id, '--block', 'near'], /ring void does not take --block/);
  usage(['queue', '--status', 'new'], /--status must be open or closed/);
  usage(['jobs', '--status', 'open'], /--status must be queued, running, done, failed/);
  usage(['jobs', '--reason', 'x'], /jobs does not take --reason/);
  usage(['queue', '--page', '0'], /--page must be an integer from 1/);
  usage(['queue', 'extra'], /unexpected arguments: extra/);
  usage(['approve', id], /approve needs --reason TEXT/);
  usage(['approve', id, '--reason', 'ok', '--block', 'exact'], /approve does not take --block/);
  usage(['hold', 'not-a-uuid', '--reason', 'r'], /"not-a-uuid" is not an upload id/);
  usage(['hold', id, '--reason', 'r', '--block', 'fuzzy'], /--block must be exact or near/);
  usage(['hold', '--reason', 'r'], /hold takes one upload ID/);
  usage(['ban', 'ada', '--reason', 'r', '--days', '1', '--until', '2031-01-01'], /not both/);
  usage(['ban', 'ada', '--reason', 'r', '--until', '2029-01-01'], /is in the past/);
  usage(['ban', 'ada', '--reason', 'r', '--until', 'tomorrow'], /must be an ISO time/);
  usage(['ban', 'ada', 'bob', '--reason', 'r'], /ban takes one USER, not ada bob/);
  usage(['unban', 'ada', '--reason', 'r'], /unban does not take --reason/);
  usage(['blocklist', 'export', 'x.csv', '--dry-run'], /blocklist export does not take --dry-run/);
  usage(['blocklist', 'import', 'x.txt'], /--format csv or --format json/);
  usage(['queue', '--frob'], /^mod: unknown option '--frob' \(see `pixvote mod --help`\)$/);
});

test('the queue table: held first as the server sent it, top reasons, person flag and score, age', () => {
  const now = Date.parse('2030-01-10T12:00:00Z');
  const item = (id: string, moderation: string, reasons: Record<string, number>, extra: object = {}) => ({
    upload: { id, username: 'ada', created_at: '2030-01-01T12:00:00Z', moderation },
    reports: {
      count: Object.values(reasons).reduce((a, b) => a + b, 0),
      reasons,
      notes: [],
      first_at: null,
      last_at: null,
    },
    person_flag: false,
    human_score: null,
    ...extra,
  });
  const text = renderQueue(
    [
      item(
        'u-held',
        'held',
        { spam: 1, sexual: 3, other: 1, violence: 2 },
        {
          reports: {
            count: 7,
            reasons: { spam: 1, sexual: 3, other: 1, violence: 2 },
            first_at: '2030-01-10T09:30:00Z',
          },
        },
      ),
      item('u-flagged', 'visible', {}, { person_flag: true, human_score: 0.934 }),
    ] as any,
    now,
  );
  assert.equal(
    text,
    'UPLOAD     STATE    REPORTS  REASONS                          PERSON    UPLOADER  AGE\n' +
      'u-held     held     7        sexual×3, violence×2, other, +1  -         ada       2h\n' +
      'u-flagged  visible  0        -                                yes 0.93  ada       9d\n',
  );
  // A vote_ring item (first in the server's order): its id, the accounts, the target.
  const ring = renderQueue(
    [
      {
        kind: 'vote_ring',
        id: 'r-1',
        accounts: [{}, {}, {}, {}, {}],
        evidence: { target: { type: 'author', id: 'a-9' }, direction: 'up', score: 5.1 },
        created_at: '2030-01-10T11:00:00Z',
      },
    ],
    now,
  );
  assert.equal(
    ring,
    'UPLOAD  STATE      REPORTS     REASONS        PERSON  UPLOADER  AGE\n' +
      'r-1     vote_ring  5 accounts  up author a-9  -       -         1h\n',
  );
  // An upload held in the gray zone: its boxes, best first, in % of the image, under the table.
  const boxed = renderQueue(
    [
      item(
        'u-gray',
        'held',
        {},
        {
          person_flag: true,
          human_score: 0.412,
          human_boxes: [
            { x: 0.12, y: 0.3, width: 0.2, height: 0.451, score: 0.412 },
            { x: 0.6, y: 0.05, width: 0.1, height: 0.2, score: 0.08 },
          ],
        },
      ),
    ] as any,
    now,
  );
  assert.equal(
    boxed,
    'UPLOAD  STATE  REPORTS  REASONS  PERSON    UPLOADER  AGE\n' +
      'u-gray  held   0        -        yes 0.41  ada       9d\n' +
      '\nPerson boxes (score at left,top size width x height, in % of the image):\n' +
      '  u-gray: 0.41 at 12,30 size 20x45; 0.08 at 60,5 size 10x20\n',
  );
  assert.equal(topReasons({ spam: 2, copyright: 2 }), 'copyright×2, spam×2');
  assert.equal(personCell(false, 0.1), '0.10');
  assert.equal(personCell(true, null), 'yes');
  assert.equal(formatAge('2030-01-10T11:59:15Z', now), '45s');
  assert.equal(formatAge('2029-11-01T12:00:00Z', now), '10w');
  assert.equal(formatAge(null, now), '-');
});

test('the modlog table names the moderator when the server shows them, "(automatic)" when none', () => {
  const entries = [
    {
      id: '1',
      at: '2030-01-01T10:00:00.000Z',
      action: 'auto_hold',
      target: { type: 'upload', id: 'u1' },
      reason: null,
    },
    { id: '2', at: '2030-01-01T09:00:00.000Z', action: 'ban', target: { type: 'user', id: 'x' }, reason: 'spam\nbot' },
  ];
  assert.equal(
    renderModlog(entries),
    'AT                    ACTION     TARGET     REASON\n' +
      '2030-01-01T10:00:00Z  auto_hold  upload u1  -\n' +
      '2030-01-01T09:00:00Z  ban        user x     spam bot\n',
  );
  const withMods = renderModlog([
    { ...entries[0]!, moderator: null },
    { ...entries[1]!, moderator: { id: 'm', username: 'mod_1' } },
  ]);
  assert.match(withMods, /^AT\s+ACTION\s+TARGET\s+MODERATOR\s+REASON\n.*\(automatic\)\s+-\n.*mod_1\s+spam bot\n$/s);
});

test('the modlog table shows an upload the public view does not name (id null) as "(not public)"', () => {
  const text = renderModlog([
    { id: '1', at: '2030-01-01T10:00:00.000Z', action: 'hold', target: { type: 'upload', id: null }, reason: 'x' },
  ]);
  assert.match(text, /^2030-01-01T10:00:00Z {2}hold {4}upload \(not public\) {2}x$/m);
});

test('the jobs table shows each job’s progress, its target and its last error', () => {
  const now = Date.parse('2030-01-01T10:05:00.000Z');
  const job = {
    id: 'a4c3e1f0-0000-4000-8000-000000000001',
    kind: 'ban_removal',
    status: 'running',
    progress: { done: 20, total: 246 },
    target: { type: 'user', id: 'b4c3e1f0-0000-4000-8000-000000000002' },
    error: null,
    created_at: '2030-01-01T10:00:00.000Z',
    updated_at: '2030-01-01T10:04:00.000Z',
  };
  const hold = { ...job, kind: 'blocklist_hold', status: 'failed', target: { type: 'blocklist', id: null } };
  const text = renderJobs([job, { ...hold, error: 'database\nunavailable' }], now);
  assert.match(text, /^JOB\s+KIND\s+STATUS\s+PROGRESS\s+TARGET\s+UPDATED\s+ERROR\n/);
  assert.match(text, /ban_removal\s+running\s+20\/246\s+user b4c3e1f0-\S+\s+1m\s+-\n/);
  assert.match(text, /blocklist_hold\s+failed\s+20\/246\s+blocklist\s+1m\s+database unavailable\n$/);
});

test('the import bar shows entries done and the time left', () => {
  assert.equal(entriesLine(5, 10, 0, 1000), `[${'#'.repeat(15)}${'-'.repeat(15)}] 5/10 entries  ETA 0:01`);
  assert.equal(entriesLine(10, 10, 0, 1000), `[${'#'.repeat(30)}] 10/10 entries  ETA 0:00`);
});

/** A fake server: records each request and answers from `handler`. */
function fakeServer(handler: (method: string, url: URL, body: any) => { status?: number; body: unknown }) {
  const calls: Array<{ method: string; path: string; body: any }> = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    calls.push({ method: init?.method ?? 'GET', path: url.pathname + url.search, body });
    const r = handler(init?.method ?? 'GET', url, body);
    return new Response(JSON.stringify(r.body), {
      status: r.status ?? 200,
      headers: { 'content-type': 'application/json' },
    });
  };
  const client = new ApiClient({ baseUrl: 'http://pixvote.test', token: 't', fetch });
  return { client, calls };
}

const sink = () => {
  let text = '';
  return {
    write: (s: string) => (text += s),
    get text() {
      return text;
    },
  };
};

async function withDir(fn: (dir: string) => Promise<void>) {
  const dir = await mkdtemp(join(tmpdir(), 'pixvote-mod-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('a file with a bad line sends nothing and names every bad line', () =>
  withDir(async (dir) => {
    const file = join(dir, 'list.csv');
    await writeFile(file, `sha256,phash,reason\n${SHA('a')},,ok\nzz,,bad\n,,empty\n`);
    const { client, calls } = fakeServer(() => ({ body: {} }));
    await assert.rejects(
      runImport(client, { file, format: 'csv', dryRun: false, reason: null }, sink()),
      (e: unknown) =>
        e instanceof CliError &&
        e.exitCode === 1 &&
        e.message ===
          `${file} has 2 invalid entries; nothing was sent:\n` +
            `  ${file}:3: sha256 "zz" is not 64 hex digits\n` +
            `  ${file}:4: neither sha256, phash nor pdq: an entry needs at least one`,
    );
    assert.equal(calls.length, 0);
    await assert.rejects(readEntries(join(dir, 'missing.csv'), 'csv', null), /cannot read .*ENOENT/);
  }));

test('an import sends each entry once, in chunks, with --reason for those without one, and sums the answers', () =>
  withDir(async (dir) => {
    const file = join(dir, 'list.json');
    const entries = Array.from({ length: 12_000 }, (_, i) => ({ sha256: i.toString(16).padStart(64, '0') }));
    entries.push({ sha256: SHA('0') }, { sha256: SHA('f'), reason: 'own' } as any);
    await writeFile(file, JSON.stringify({ entries }));
    const { client, calls } = fakeServer((_m, _u, body) => ({
      body: { added: body.entries.length - 1, skipped: 1 },
    }));
    const out = sink();
    assert.equal(await runImport(client, { file, format: 'json', dryRun: false, reason: 'list 7' }, out), 0);
    assert.deepEqual(
      calls.map((c) => [c.method, c.path, c.body.entries.length]),
      [
        ['POST', '/api/admin/blocklist', 10_000],
        ['POST', '/api/admin/blocklist', 2_001],
      ],
    );
    assert.deepEqual(calls[0]!.body.entries[0], { sha256: SHA('0'), reason: 'list 7' });
    assert.deepEqual(calls[1]!.body.entries.at(-1), { sha256: SHA('f'), reason: 'own' });
    assert.equal(
      out.text,
      'sent 10000/12001 entries\nsent 12001/12001 entries\n' +
        `imported ${file}: 11999 added, 2 skipped (already on the blocklist); ` +
        '1 line repeating an earlier one sent once\n',
    );
  }));

test('--dry-run asks the server when it documents dry_run, else compares with the exported list; adds nothing', () =>
  withDir(async (dir) => {
    const file = join(dir, 'list.csv');
    await writeFile(file, `sha256,phash,reason\n${SHA('a')},,x\n${SHA('b')},,y\n,${PH('c')},z\n`);
    const openapi = (dryRun: boolean) => ({
      openapi: '3.1.0',
      paths: {
        '/api/admin/blocklist': {
          post: { parameters: dryRun ? [{ $ref: '#/components/parameters/DryRun' }] : [] },
        },
      },
      components: { parameters: { DryRun: { name: 'dry_run', in: 'query' } } },
    });
    const offered = fakeServer((method, url) =>
      url.pathname === '/api/openapi.json' ? { body: openapi(true) } : { body: { added: 2, skipped: 1, matches: 4 } },
    );
    const out = sink();
    assert.equal(await runImport(offered.client, { file, format: 'csv', dryRun: true, reason: null }, out), 0);
    assert.deepEqual(
      offered.calls.map((c) => `${c.method} ${c.path}`),
      ['GET /api/openapi.json', 'POST /api/admin/blocklist?dry_run=true'],
    );
    assert.equal(
      out.text,
      `dry run, nothing changed: 3 entries in ${file}: 2 new, 1 already on the blocklist\n` +
        '4 existing uploads would be held\n',
    );

    const listed = (page: number) =>
      page === 1
        ? { entries: [{ id: '1', sha256: SHA('a'), phash: null, reason: 'x' }], page, has_more: true }
        : { entries: [{ id: '2', sha256: null, phash: PH('c'), reason: null }], page, has_more: false };
    const older = fakeServer((method, url) => {
      assert.equal(method, 'GET', 'a server without dry_run gets no POST');
      if (url.pathname === '/api/openapi.json') return { body: openapi(false) };
      return { body: listed(Number(url.searchParams.get('page'))) };
    });
    const out2 = sink();
    assert.equal(await runImport(older.client, { file, format: 'csv', dryRun: true, reason: null }, out2), 0);
    assert.equal(
      out2.text,
      `dry run, nothing changed: 3 entries in ${file}: 1 new, 2 already on the blocklist\n` +
        'this server offers no dry run: how many existing uploads the new entries would hold is not known\n',
    );
  }));

test('an export pages through the blocklist and replaces the file at once', () =>
  withDir(async (dir) => {
    const file = join(dir, 'out.csv');
    await writeFile(file, 'old\n');
    const { client, calls } = fakeServer((_m, url) => {
      const page = Number(url.searchParams.get('page'));
      return {
        body: {
          entries: [
            { id: String(page), sha256: SHA(String(page)), phash: null, reason: `r, ${page}`, source: 'import' },
          ],
          page,
          has_more: page < 3,
        },
      };
    });
    const out = sink();
    assert.equal(await runExport(client, { file, format: 'csv' }, out), 0);
    assert.deepEqual(
      calls.map((c) => c.path),
      [1, 2, 3].map((p) => `/api/admin/blocklist?page=${p}&limit=1000`),
    );
    assert.equal(
      await readFile(file, 'utf8'),
      `sha256,phash,reason\n${SHA('1')},,"r, 1"\n${SHA('2')},,"r, 2"\n${SHA('3')},,"r, 3"\n`,
    );
    assert.deepEqual(await readdir(dir), ['out.csv'], 'no temporary file left');
    assert.equal(out.text, `exported 3 entries to ${file}\n`);
  }));

test('a 401 says not logged in, a 403 forbidden names the login that is not an admin; exit 1', async () => {
  const ctx = { url: 'http://pixvote.test', username: 'ada' };
  const queue = parseModArgs(['queue']).request;
  const refused = (status: number, error: string) =>
    fakeServer(() => ({ status, body: { error, message: `${error} says the server` } })).client;
  await assert.rejects(
    runMod(refused(401, 'unauthorized'), queue, sink(), ctx),
    (e: unknown) =>
      e instanceof CliError && e.exitCode === 1 && /^not logged in to http:\/\/pixvote\.test/.test(e.message),
  );
  await assert.rejects(
    runMod(refused(403, 'forbidden'), queue, sink(), ctx),
    (e: unknown) =>
      e instanceof CliError &&
      e.exitCode === 1 &&
      e.message.startsWith('the saved login (ada) is not an admin on http://pixvote.test'),
  );
  await assert.rejects(runMod(refused(403, 'forbidden'), queue, sink(), { url: ctx.url }), /the token given is not/);
  await assert.rejects(runMod(refused(403, 'banned'), queue, sink(), ctx), { name: 'ApiError', code: 'banned' });
});

test('ban finds the user by exact username in any case, through the pages of the prefix search', async () => {
  const { client, calls } = fakeServer((method, url) => {
    if (method === 'POST') return { body: { user: { username: 'Ada' }, banned_until: 'permanent' } };
    const page = Number(url.searchParams.get('page'));
    const users = page === 1 ? [{ id: 'id-adam', username: 'adam' }] : [{ id: 'id-ada', username: 'Ada' }];
    return { body: { users, page, limit: 50, has_more: page === 1 } };
  });
  const out = sink();
  const ban = parseModArgs(['ban', 'ADA', '--reason', 'spam']).request;
  assert.equal(await runMod(client, ban, out, { url: 'http://pixvote.test' }), 0);
  assert.deepEqual(
    calls.map((c) => `${c.method} ${c.path}`),
    [
      'GET /api/admin/users?q=ADA&page=1&limit=50',
      'GET /api/admin/users?q=ADA&page=2&limit=50',
      'POST /api/admin/users/id-ada/ban',
    ],
  );
  assert.deepEqual(calls[2]!.body, { reason: 'spam', until: null, remove_uploads: false });
  assert.equal(out.text, 'banned Ada permanently\n');
  const nobody = fakeServer(() => ({ body: { users: [], page: 1, limit: 50, has_more: false } }));
  await assert.rejects(
    runMod(nobody.client, parseModArgs(['unban', 'zed']).request, sink(), { url: 'http://x' }),
    (e: unknown) => e instanceof CliError && e.exitCode === 1 && e.message === 'no user "zed"',
  );
});
