/** The command line of `pixvote mod …`, parsed into one request: a pure function, checked before anything is sent. */
import { CliError, parseCommandArgs } from './cli-config.store.ts';
import { formatOf, type BlocklistFormat } from './blocklist-file.ts';

export const MOD_USAGE = `usage: pixvote mod <subcommand> [options]     (admins only)

  queue [--status open|closed] [--page N] [--limit N] [--json]
        The moderation queue, held uploads first, then the most reported, then the oldest: upload id, state,
        reports, top reasons, person flag and score, uploader, age (since the first report, else the upload).
        --json prints the server's answer as it is.
  approve ID --reason TEXT                 visible again; its reports and person flag closed
  hold ID --reason TEXT [--block exact|near]
  remove ID --reason TEXT [--block exact|near]
        --block exact adds the image's SHA-256 to the blocklist, near its perceptual hash and PDQ too.
  ban USER --reason TEXT [--until ISO-TIME | --days N] [--remove-uploads]
        USER is a username (any case) or a user id; without --until or --days the ban is permanent.
        --remove-uploads removes every upload of theirs (a background job, after the answer).
  unban USER
  blocklist import FILE [--dry-run] [--reason TEXT] [--format csv|json|hma-csv]
        CSV with the header sha256,phash,reason (and optionally pdq), JSON (an array of
        {"sha256","phash","pdq","reason"}, or {"entries": [...]}), or hma-csv: python-threatexchange's
        collab,signal_type,signal_str,category,tags (its pdq rows; other signal types are counted and left out;
        a .csv file with that header is read as it). The format is the extension's unless --format says. Each
        entry needs a 64-hex sha256, a 16-hex phash or a 64-hex pdq. Every line is checked first: any bad one is
        reported with its line number and nothing is sent. Sent in chunks of at most 10 000; --reason is for the
        entries without one.
        --dry-run changes nothing: it says how many entries are new and how many already listed, and how many
        existing uploads the new ones would hold.
  blocklist export FILE [--format csv|json|hma-csv]
        Every blocklist entry, written to FILE (replaced at once, never half-written); hma-csv writes the PDQ
        entries in python-threatexchange's CSV (collab pixvote, category POSITIVE_CLASS, tags the reason).
  modlog [--page N] [--limit N] [--json]
        The public moderation log, newest first.
  jobs [--status queued|running|done|failed] [--page N] [--limit N] [--json]
        The durable moderation jobs, newest first: a ban's removal of uploads, the holds of new blocklist entries,
        with their progress (done/total).
  ring void|dismiss|restore ID [--reason TEXT]
        A vote_ring item of the queue: void takes every vote of its accounts out of the counts (kept aside; the
        counts stay exact); dismiss closes it; restore puts a void's votes back (within VOTE_RING_RESTORE_DAYS).

  --url URL, --token TOKEN (or PIXVOTE_URL, PIXVOTE_TOKEN); by default the saved login, which must be an admin's.
  Exit 0: done; 1: the server refused or failed (its message is printed); 2: usage error.
`;

export type Decision = 'approve' | 'hold' | 'remove';

const JOB_STATUSES = ['queued', 'running', 'done', 'failed'] as const;
type JobStatus = (typeof JOB_STATUSES)[number];

export type ModRequest =
  | { kind: 'help' }
  | { kind: 'queue'; status: 'open' | 'closed'; page: number; limit: number | null; json: boolean }
  | { kind: 'decide'; action: Decision; id: string; reason: string; block: 'none' | 'exact' | 'near' }
  | { kind: 'ban'; user: string; reason: string; until: string | null; removeUploads: boolean }
  | { kind: 'unban'; user: string }
  | { kind: 'import'; file: string; format: BlocklistFormat; dryRun: boolean; reason: string | null }
  | { kind: 'export'; file: string; format: BlocklistFormat }
  | { kind: 'modlog'; page: number; limit: number | null; json: boolean }
  | { kind: 'jobs'; status: JobStatus | null; page: number; limit: number | null; json: boolean }
  | { kind: 'ring'; action: 'void' | 'dismiss' | 'restore'; id: string; reason: string };

export interface ParsedMod {
  request: ModRequest;
  target: { url?: string | undefined; token?: string | undefined };
}

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  status: { type: 'string' },
  page: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
  block: { type: 'string' },
  reason: { type: 'string' },
  until: { type: 'string' },
  days: { type: 'string' },
  'remove-uploads': { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  format: { type: 'string' },
} as const;

type Flag = Exclude<keyof typeof OPTIONS, 'url' | 'token' | 'help'>;

/** The flags each subcommand takes, besides --url, --token and --help. */
const ALLOWED: Record<string, readonly Flag[]> = {
  queue: ['status', 'page', 'limit', 'json'],
  approve: ['reason'],
  hold: ['reason', 'block'],
  remove: ['reason', 'block'],
  ban: ['reason', 'until', 'days', 'remove-uploads'],
  unban: [],
  'blocklist import': ['dry-run', 'reason', 'format'],
  'blocklist export': ['format'],
  modlog: ['page', 'limit', 'json'],
  jobs: ['status', 'page', 'limit', 'json'],
  'ring void': ['reason'],
  'ring dismiss': ['reason'],
  'ring restore': ['reason'],
};

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const usage = (what: string) => new CliError(`mod: ${what} (see \`pixvote mod --help\`)`);

function int(name: string, value: string | undefined, min: number, max: number): number | null {
  if (value === undefined) return null;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw usage(`--${name} must be an integer from ${min} to ${max} (got "${value}")`);
  return Number(value);
}

function reasonOf(sub: string, reason: string | undefined): string {
  if (!reason?.trim()) throw usage(`${sub} needs --reason TEXT (it goes in the public moderation log)`);
  return reason.trim();
}

function untilOf(until: string | undefined, days: string | undefined, now: number): string | null {
  if (until !== undefined && days !== undefined) throw usage('ban takes --until or --days, not both');
  const n = int('days', days, 1, 36_500);
  if (n !== null) return new Date(now + n * 86_400_000).toISOString();
  if (until === undefined) return null;
  const t = /^\d{4}-\d{2}-\d{2}/.test(until) ? Date.parse(until) : NaN;
  if (Number.isNaN(t)) throw usage(`--until must be an ISO time such as 2030-01-31T12:00:00Z (got "${until}")`);
  if (t <= now) throw usage(`--until ${until} is in the past`);
  return new Date(t).toISOString();
}

export function parseModArgs(argv: string[], now = Date.now()): ParsedMod {
  const { values: v, positionals } = parseCommandArgs('mod', { args: argv, allowPositionals: true, options: OPTIONS });
  const target = { url: v.url, token: v.token };
  if (v.help) return { request: { kind: 'help' }, target };
  const [first, ...rest] = positionals;
  if (!first) throw usage('which subcommand? queue, approve, hold, remove, ban, unban, blocklist, modlog, jobs, ring');
  const sub = first === 'blocklist' || first === 'ring' ? `${first} ${rest.shift() ?? ''}`.trim() : first;
  if (first === 'blocklist' && !Object.hasOwn(ALLOWED, sub)) throw usage('blocklist takes import FILE or export FILE');
  if (first === 'ring' && !Object.hasOwn(ALLOWED, sub)) throw usage('ring takes void ID, dismiss ID or restore ID');
  if (!Object.hasOwn(ALLOWED, sub)) throw usage(`unknown subcommand "${sub}"`);
  const allowed = ALLOWED[sub]!;
  for (const flag of Object.keys(v) as Array<keyof typeof OPTIONS>)
    if (flag !== 'url' && flag !== 'token' && flag !== 'help' && !allowed.includes(flag))
      throw usage(`${sub} does not take --${flag}`);
  const one = (what: string): string => {
    if (rest.length !== 1) throw usage(`${sub} takes one ${what}${rest.length ? `, not ${rest.join(' ')}` : ''}`);
    return rest[0]!;
  };
  const none = () => {
    if (rest.length) throw usage(`unexpected arguments: ${rest.join(' ')}`);
  };

  switch (sub) {
    case 'queue': {
      none();
      const status = v.status ?? 'open';
      if (status !== 'open' && status !== 'closed') throw usage(`--status must be open or closed (got "${status}")`);
      const page = int('page', v.page, 1, 1_000_000) ?? 1;
      return { request: { kind: 'queue', status, page, limit: int('limit', v.limit, 1, 100), json: !!v.json }, target };
    }
    case 'approve':
    case 'hold':
    case 'remove': {
      const id = one('upload ID');
      if (!UUID.test(id)) throw usage(`"${id}" is not an upload id (a UUID)`);
      const block = v.block ?? 'none';
      if (block !== 'none' && block !== 'exact' && block !== 'near')
        throw usage(`--block must be exact or near (got "${block}")`);
      return { request: { kind: 'decide', action: sub, id, reason: reasonOf(sub, v.reason), block }, target };
    }
    case 'ban': {
      const user = one('USER');
      const until = untilOf(v.until, v.days, now);
      const reason = reasonOf(sub, v.reason);
      return { request: { kind: 'ban', user, reason, until, removeUploads: !!v['remove-uploads'] }, target };
    }
    case 'unban':
      return { request: { kind: 'unban', user: one('USER') }, target };
    case 'blocklist import': {
      const file = one('FILE');
      const reason = v.reason?.trim() || null;
      return {
        request: { kind: 'import', file, format: formatOf(file, v.format), dryRun: !!v['dry-run'], reason },
        target,
      };
    }
    case 'ring void':
    case 'ring dismiss':
    case 'ring restore': {
      const id = one('vote-ring ID');
      if (!UUID.test(id)) throw usage(`"${id}" is not a vote-ring id (a UUID)`);
      const action = sub === 'ring void' ? 'void' : sub === 'ring restore' ? 'restore' : 'dismiss';
      return { request: { kind: 'ring', action, id, reason: v.reason?.trim() ?? '' }, target };
    }
    case 'jobs': {
      none();
      const status = v.status ?? null;
      if (status !== null && !(JOB_STATUSES as readonly string[]).includes(status))
        throw usage(`--status must be ${JOB_STATUSES.join(', ')} (got "${status}")`);
      const page = int('page', v.page, 1, 1_000_000) ?? 1;
      const limit = int('limit', v.limit, 1, 100);
      return { request: { kind: 'jobs', status: status as JobStatus | null, page, limit, json: !!v.json }, target };
    }
    case 'blocklist export': {
      const file = one('FILE');
      return { request: { kind: 'export', file, format: formatOf(file, v.format) }, target };
    }
    default: {
      none();
      const page = int('page', v.page, 1, 1_000_000) ?? 1;
      return { request: { kind: 'modlog', page, limit: int('limit', v.limit, 1, 100), json: !!v.json }, target };
    }
  }
}
