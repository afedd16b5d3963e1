/**
 * `pixvote upload`: every image under the given paths, N at a time. Each file carries an Idempotency-Key
 * derived from its SHA-256 and the upload options, so a retry, or a whole re-run, never stores it twice; the
 * resume file (resume.store.ts) makes a re-run skip the files an earlier run finished without any request.
 * A Retry-After longer than --max-wait stops the run at once (exit 75), SIGINT stops it too (exit 130): both
 * leave the resume file and print the summary.
 */
import { createHash } from 'node:crypto';
import { createReadStream, openAsBlob } from 'node:fs';
import { basename, extname } from 'node:path';
import { ApiClient, NetworkError, toApiError, type ApiResponse, type RetryNotice } from './api.client.ts';
import { InterruptedError, WaitTooLongError } from './retry.policy.ts';
import { ResumeFile } from './resume.store.ts';
import { DEFAULT_CHUNK, NoResumableEndpoint, sendResumable } from './resumable.sender.ts';
import { CliError } from './cli-config.store.ts';
import { parseTagList } from '../domain/tags.ts';
import { MAX_FILE_BYTES } from '../domain/uploads/limits.ts';
import { walkImages, type ImageFile } from './image-files.walker.ts';
import { ProgressReporter, formatBytes, formatDuration, type Output } from './progress.reporter.ts';

/** API.md: a file may be at most 10 MiB; larger ones are refused here instead of being sent for a 413. */
const MIME: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};

export interface UploadOptions {
  paths: string[];
  tags: string[];
  isPrivate: boolean;
  concurrency: number;
  /** Where finished files are recorded (defaultResumePath unless --resume FILE). */
  resumePath: string;
  /** Ask the server first which files' bytes it has (POST /api/uploads/check); false: --no-check. */
  preCheck?: boolean;
  /**
   * Which files go through the tus endpoint: `auto` (default) those larger than one chunk, `always` every file,
   * `never` none. A file that fits in one chunk gains nothing from resuming (a cut sends it again whole either way)
   * and costs three requests instead of one, so `auto` sends it directly.
   */
  resumable?: 'auto' | 'always' | 'never';
  /** Bytes per tus PATCH (default 1 MiB). */
  chunkSize?: number;
  /** Called once the run can be interrupted: `stop()` ends it as SIGINT should. Returns the unsubscribe. */
  onInterrupt?: (stop: () => void) => () => void;
}

type Outcome =
  /** `held`: stored held for review (API.md, `moderation: "held"`), out of every listing until a moderator approves. */
  | { kind: 'uploaded' | 'replayed'; id: string; held: boolean }
  | { kind: 'duplicate'; id: string; match: string }
  /** The pre-check found these bytes on the server (an upload this user may see): not sent. */
  | { kind: 'known'; id: string }
  | { kind: 'failed'; reason: string; fatal?: boolean }
  /** Not finished: the run was halted (interrupted, or a wait longer than --max-wait) before or while sending it. */
  | { kind: 'halted' };

/**
 * Tags as the server will store them, by the server's own rule (domain/tags.ts), so a bad list fails before any upload.
 */
export function normalizeTags(raw: string[]): string[] {
  try {
    return parseTagList(raw.join(','));
  } catch (e) {
    throw new CliError((e as Error).message);
  }
}

/** The same file with the same options always gets the same key; anything else, another key. */
export function idempotencyKey(sha256: string, opts: { tags: string[]; isPrivate: boolean }): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(['pixvote-cli/1', sha256, opts.tags.join(','), opts.isPrivate]))
    .digest('hex');
  return `pixvote-cli-${digest}`;
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * One request per distinct key in a run: a second file with the same bytes waits for the first and is its duplicate.
 */
type Sent = Map<string, { path: string; outcome: Promise<Outcome> }>;
/** A line to show; a Retry-After wait also tells the progress how long every request now waits, and why. */
type Note = (line: string, waitMs: number, reason: string) => void;

/** What the pre-check said of a file's bytes (POST /api/uploads/check), by SHA-256. */
type Known = Map<string, { status: 'exists' | 'blocked'; id: string | null }>;

/** Digests per pre-check request (API.md: 1–1 000). */
export const CHECK_BATCH = 1000;

/**
 * Asks the server which of the files' bytes it already has (visible to this user) or refuses, a thousand digests a
 * request, so that only the rest are sent. A server without the pre-check (404, 405) or one that fails it is not
 * asked again: every file is then sent, as before.
 */
async function preCheck(client: ApiClient, digests: string[], note: (line: string) => void): Promise<Known> {
  const known: Known = new Map();
  const unique = [...new Set(digests)];
  for (let i = 0; i < unique.length; i += CHECK_BATCH) {
    let r;
    try {
      r = await client.request('POST', '/api/uploads/check', {
        json: { sha256: unique.slice(i, i + CHECK_BATCH) },
        // Said as the uploads say theirs: a server that is down is waited for in plain sight, not in silence.
        onRetry: (n) => {
          const wait = `${(n.waitMs / 1000).toFixed(1)} s`;
          note(
            n.retryAfter
              ? `waiting ${wait} before retrying the pre-check (${n.reason}; as Retry-After asks)`
              : `retrying the pre-check in ${wait} (${n.reason}; retry ${n.attempt} of ${n.retries})`,
          );
        },
      });
    } catch (e) {
      if (e instanceof NetworkError) {
        note(`pre-check unavailable (server unreachable: ${e.message}); sending every file`);
        return known;
      }
      throw e;
    }
    if (r.status !== 200) {
      const err = toApiError(r);
      note(`pre-check unavailable (${err.code}: ${err.message}); sending every file`);
      return known;
    }
    const results = (r.body as { results: Array<{ sha256: string; status: string; upload_id: string | null }> })
      .results;
    for (const x of results) {
      if (x.status === 'exists' || x.status === 'blocked') known.set(x.sha256, { status: x.status, id: x.upload_id });
    }
  }
  return known;
}

/** What every file of a run shares. */
interface Run {
  client: ApiClient;
  opts: UploadOptions;
  sent: Sent;
  note: Note;
  digests: Map<string, string>;
  known: Known;
  resume: ResumeFile;
  /** The server answered 404/405 to a tus creation (an older pixvote): every file goes directly. */
  noResumable: boolean;
}

async function uploadOne(run: Run, file: ImageFile): Promise<Outcome> {
  const { opts, sent, digests, known } = run;
  if (file.size === 0) return { kind: 'failed', reason: 'the file is empty' };
  if (file.size > MAX_FILE_BYTES)
    return {
      kind: 'failed',
      reason: `${formatBytes(file.size)} is over the limit of 10 MiB (${MAX_FILE_BYTES} bytes)`,
    };
  const sha256 = digests.get(file.path) ?? (await sha256File(file.path));
  const seen = known.get(sha256);
  if (seen?.status === 'exists' && seen.id) return { kind: 'known', id: seen.id };
  if (seen?.status === 'blocked')
    return { kind: 'failed', reason: "blocked_content: the bytes match the moderators' blocklist (not sent)" };
  const key = idempotencyKey(sha256, opts);
  const first = sent.get(key);
  if (first) {
    const o = await first.outcome;
    return o.kind === 'failed' || o.kind === 'halted'
      ? o
      : { kind: 'duplicate', id: o.id, match: `same bytes as ${first.path}, an exact` };
  }
  const outcome = send(run, file, key, sha256);
  sent.set(key, { path: file.path, outcome });
  return outcome;
}

/** Said as the direct upload says it: a Retry-After waited exactly, a backoff with its retry count. */
const retryNote =
  (file: ImageFile, note: Note) =>
  (n: RetryNotice): void =>
    note(
      n.retryAfter
        ? `waiting ${(n.waitMs / 1000).toFixed(1)} s before retrying ${file.path} (${n.reason}; as Retry-After asks)`
        : `retrying ${file.path} in ${(n.waitMs / 1000).toFixed(1)} s ` +
            `(${n.reason}; retry ${n.attempt} of ${n.retries})`,
      n.retryAfter ? n.waitMs : 0,
      n.reason,
    );

/** Goes through tus when the options say so for this file's size, and the server has the endpoint. */
function goesResumable(run: Run, file: ImageFile): boolean {
  const mode = run.opts.resumable ?? 'auto';
  if (mode === 'never' || run.noResumable) return false;
  return mode === 'always' || file.size > (run.opts.chunkSize ?? DEFAULT_CHUNK);
}

async function send(run: Run, file: ImageFile, key: string, sha256: string): Promise<Outcome> {
  const { client, resume } = run;
  if (goesResumable(run, file)) {
    let sent: { response: ApiResponse; replayed: boolean };
    try {
      sent = await sendResumable(client, {
        file,
        sha256,
        chunkSize: run.opts.chunkSize ?? DEFAULT_CHUNK,
        idempotencyKey: key,
        tags: run.opts.tags,
        isPrivate: run.opts.isPrivate,
        resume,
        onRetry: retryNote(file, run.note),
        note: (line) => run.note(line, 0, ''),
      });
    } catch (e) {
      if (e instanceof NoResumableEndpoint) {
        run.noResumable = true;
        run.note(`the server has no resumable uploads (${e.message}): sending files directly`, 0, '');
        return sendDirect(run, file, key);
      }
      return halted(client, e);
    }
    const r = sent.response;
    const o = outcomeOf(r);
    if (o.kind === 'uploaded' && sent.replayed) o.kind = 'replayed';
    // The upload is over on the server (a record, a duplicate, a refusal): nothing to continue next time.
    if (r.status !== 202) resume.forget(file);
    return r.status === 202 ? { kind: 'failed', reason: 'still being processed on the server; run again' } : o;
  }
  return sendDirect(run, file, key);
}

/** A network failure fails the file; a halt (Ctrl-C, a wait over --max-wait) stops it unfinished. */
function halted(client: ApiClient, e: unknown): Outcome {
  if (e instanceof NetworkError) return { kind: 'failed', reason: `server unreachable: ${e.message}` };
  if (e instanceof WaitTooLongError) client.halt(e);
  if (client.halted) return { kind: 'halted' };
  throw e;
}

/** The direct upload's answer, or the resumable upload's result (the same answer): what became of the file. */
function outcomeOf(r: ApiResponse): Outcome {
  if (r.status === 201)
    return {
      kind: r.headers.get('idempotent-replayed') === 'true' ? 'replayed' : 'uploaded',
      id: r.body.id,
      held: r.body.moderation === 'held',
    };
  if (r.status === 200 && r.body?.duplicate)
    return { kind: 'duplicate', id: r.body.existingUploadId, match: r.body.match };
  const err = toApiError(r);
  // A refused credential fails every file alike: stop instead of sending the rest.
  return { kind: 'failed', reason: `${err.code}: ${err.message}`, fatal: r.status === 401 || r.status === 403 };
}

async function sendDirect(run: Run, file: ImageFile, key: string): Promise<Outcome> {
  const { client, opts } = run;
  const form = async () => {
    const f = new FormData();
    f.append('upload_type', 'image');
    if (opts.tags.length) f.append('tags', opts.tags.join(','));
    f.append('is_private', String(opts.isPrivate));
    f.append(
      'file',
      await openAsBlob(file.path, { type: MIME[extname(file.path).toLowerCase()] ?? 'application/octet-stream' }),
      basename(file.path),
    );
    return f;
  };
  let r;
  try {
    r = await client.request('POST', '/api/v1/upload', {
      form,
      headers: { 'idempotency-key': key },
      onRetry: retryNote(file, run.note),
    });
  } catch (e) {
    return halted(client, e);
  }
  return outcomeOf(r);
}

/** A file that vanished or cannot be read mid-run fails alone. */
const unreadable = (e: NodeJS.ErrnoException): Outcome => ({
  kind: 'failed',
  reason: e.code ? `cannot read it (${e.code})` : e.message,
});

export async function runUpload(client: ApiClient, opts: UploadOptions, out: Output): Promise<number> {
  const walked = await walkImages(opts.paths);
  for (const s of walked.skipped) out.write(`skipped ${s}: not a .jpg, .jpeg, .png, .gif or .webp file\n`);
  const failures: string[] = walked.unreadable.map((u) => `${u.path}: ${u.reason}`);
  if (!walked.files.length) {
    for (const f of failures) out.write(`cannot read ${f}\n`);
    throw new CliError(`no image files (.jpg, .jpeg, .png, .gif, .webp) found in ${opts.paths.join(' ')}`, 1);
  }
  const resume = await ResumeFile.open(opts.resumePath, {
    server: client.baseUrl,
    paths: opts.paths,
    tags: opts.tags,
    isPrivate: opts.isPrivate,
  });
  const files = walked.files.filter((f) => !resume.isDone(f));
  const resumed = walked.files.length - files.length;
  if (resumed) {
    out.write(`resuming: ${resumed} files done by an earlier run are skipped without a request (${resume.path})\n`);
  }
  const totalBytes = files.reduce((n, f) => n + f.size, 0);
  out.write(
    `uploading ${files.length} files (${formatBytes(totalBytes)}) to ${client.baseUrl}, ` +
      `${opts.concurrency} at a time\n`,
  );
  // The pre-check: hash every file once, ask which bytes are there already, send only the rest.
  const digests = new Map<string, string>();
  for (const f of files) {
    if (f.size > 0 && f.size <= MAX_FILE_BYTES) {
      try {
        digests.set(f.path, await sha256File(f.path));
      } catch {
        // Unreadable now: its upload attempt reports why.
      }
    }
  }
  const known =
    opts.preCheck === false ? new Map() : await preCheck(client, [...digests.values()], (l) => out.write(`${l}\n`));
  if (known.size) {
    const there = [...digests.values()].filter((d) => known.get(d)?.status === 'exists').length;
    const blocked = [...digests.values()].filter((d) => known.get(d)?.status === 'blocked').length;
    out.write(`pre-check: ${there} files already there, ${blocked} blocked: not sent\n`);
  }
  const progress = new ProgressReporter(out, { files: files.length, bytes: totalBytes });
  const counts = { uploaded: 0, held: 0, replayed: 0, duplicate: 0, known: 0, failed: failures.length, notSent: 0 };
  const duplicates: string[] = [];
  const sent: Sent = new Map();
  let abort: string | null = null;
  let next = 0;
  const note: Note = (line, waitMs, reason) => {
    progress.message(line);
    if (waitMs) progress.waiting(Date.now() + waitMs, reason);
  };
  const run: Run = { client, opts, sent, note, digests, known, resume, noResumable: false };
  const unsubscribe = opts.onInterrupt?.(() => {
    if (!client.halted) progress.message('interrupted: stopping (the files finished so far go into the resume file)');
    client.halt(new InterruptedError());
  });

  const worker = async () => {
    for (let i = next++; i < files.length; i = next++) {
      const file = files[i]!;
      const o: Outcome = client.halted
        ? { kind: 'halted' }
        : abort
          ? { kind: 'failed', reason: `not sent: ${abort}` }
          : await uploadOne(run, file).catch(unreadable);
      if (o.kind === 'halted') {
        counts.notSent++;
      } else if (o.kind === 'failed') {
        counts.failed++;
        failures.push(`${file.path}: ${o.reason}`);
        if (o.fatal) abort ??= o.reason;
        progress.fileDone(file.size, true, `FAILED    ${file.path}: ${o.reason}`);
      } else if (o.kind === 'known') {
        counts.known++;
        resume.record(file, 'duplicate', o.id);
        progress.fileDone(file.size, false, `already   ${file.path} → ${o.id} (the server has these bytes: not sent)`);
      } else if (o.kind === 'duplicate') {
        counts.duplicate++;
        resume.record(file, 'duplicate', o.id);
        duplicates.push(`${file.path}: ${o.match} duplicate of ${o.id}`);
        progress.fileDone(file.size, false, `duplicate ${file.path}: ${o.match} duplicate of ${o.id}`);
      } else {
        // Stored, but a held one is not public: said apart, so nobody looks for it in the feed.
        counts[o.kind === 'uploaded' && o.held ? 'held' : o.kind]++;
        resume.record(file, o.kind, o.id);
        progress.fileDone(
          file.size,
          false,
          `${(o.kind === 'replayed' ? 'already' : o.held ? 'held' : 'uploaded').padEnd(10)}${file.path} → ${o.id}` +
            (o.kind === 'replayed' ? ' (uploaded by an earlier run)' : '') +
            (o.held ? ' (held for review: listed once a moderator approves it)' : ''),
        );
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, files.length) }, worker));
  } finally {
    unsubscribe?.();
    progress.finish();
  }

  const halted = client.halted;
  const complete = !halted && !counts.failed;
  if (complete) await resume.remove();
  else if (resume.size || resume.partials || halted) await resume.flush();
  const elapsed = Date.now() - progress.state.startedAt;
  const skipped = walked.skipped.length + resumed;
  if (halted instanceof WaitTooLongError) out.write(`\nstopped: ${halted.message}\n`);
  out.write(
    `\n${halted ? 'stopped after' : 'done in'} ${formatDuration(elapsed)}: ` +
      `${counts.uploaded} uploaded, ${counts.held ? `${counts.held} held for review, ` : ''}` +
      `${counts.replayed} already uploaded, ` +
      `${counts.duplicate} duplicates, ${counts.failed} failed${skipped ? `, ${skipped} skipped` : ''}` +
      `${counts.known ? `, ${counts.known} already there (not sent)` : ''}` +
      `${counts.notSent ? `, ${counts.notSent} not sent` : ''} (${files.length} files, ${formatBytes(totalBytes)})\n`,
  );
  if (resumed) out.write(`skipped ${resumed} files done by an earlier run\n`);
  if (duplicates.length) out.write(`duplicates (nothing new stored):\n${duplicates.map((d) => `  ${d}\n`).join('')}`);
  if (failures.length) out.write(`failed:\n${failures.map((f) => `  ${f}\n`).join('')}`);
  if (!complete && (resume.size || halted)) {
    out.write(`resume file: ${resume.path} (${resume.size} files done); run the same command again to go on\n`);
  }
  if (halted instanceof InterruptedError) return 130;
  if (halted instanceof WaitTooLongError) return 75;
  return counts.failed ? 1 : 0;
}
