/**
 * `pixvote mod blocklist import|export`: a file of hashes to the server's blocklist and back. An import checks every
 * entry before it sends any, then sends them in chunks the server accepts (≤ 10 000 entries, < 1 MiB).
 */
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { ApiClient } from './api.client.ts';
import { CliError } from './cli-config.store.ts';
import {
  chunkEntries,
  entryKey,
  formatBlocklist,
  parseBlocklist,
  wireEntry,
  type BlocklistEntry,
  type BlocklistFormat,
} from './blocklist-file.ts';
import { formatDuration, type Output } from './progress.reporter.ts';

const MAX_REPORTED_ERRORS = 50;
const EXPORT_PAGE = 1000;

/** `[#####-----] 20000/50000 entries  ETA 0:05` */
export function entriesLine(done: number, total: number, startedAt: number, now: number): string {
  const width = 30;
  const filled = Math.round((width * done) / Math.max(1, total));
  const rate = done / Math.max(1, now - startedAt);
  const eta = done >= total ? 0 : rate > 0 ? (total - done) / rate : Infinity;
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} entries  ETA ${formatDuration(eta)}`;
}

/** The entries of the file, checked; any bad one stops the import before a request, with every bad line named. */
export async function readEntries(file: string, format: BlocklistFormat, reason: string | null) {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, 1);
  }
  const { entries, errors, otherSignals } = parseBlocklist(text, format);
  if (errors.length) {
    const shown = errors.slice(0, MAX_REPORTED_ERRORS).map((e) => `  ${file}:${e.line}: ${e.message}`);
    if (errors.length > shown.length) shown.push(`  … and ${errors.length - shown.length} more`);
    const n = errors.length === 1 ? '1 invalid entry' : `${errors.length} invalid entries`;
    throw new CliError(`${file} has ${n}; nothing was sent:\n${shown.join('\n')}`, 1);
  }
  if (!entries.length)
    throw new CliError(`${file} has no entries${otherNote(otherSignals ?? {}, ' (', ')')}; nothing was sent`, 1);
  const unique = new Map<string, BlocklistEntry>();
  for (const { entry } of entries) {
    const k = entryKey(entry);
    if (!unique.has(k)) unique.set(k, { ...entry, reason: entry.reason ?? reason });
  }
  return {
    total: entries.length,
    unique: [...unique.values()],
    repeated: entries.length - unique.size,
    otherSignals: otherSignals ?? {},
  };
}

/** Every entry on the server's blocklist, page by page. */
export async function fetchBlocklist(client: ApiClient): Promise<BlocklistEntry[]> {
  const all: BlocklistEntry[] = [];
  for (let page = 1; ; page++) {
    const r = (await client.call('GET', `/api/admin/blocklist?page=${page}&limit=${EXPORT_PAGE}`)) as {
      entries: BlocklistEntry[];
      has_more: boolean;
    };
    for (const e of r.entries)
      all.push({
        sha256: e.sha256 ?? null,
        phash: e.phash ?? null,
        ...(e.pdq ? { pdq: e.pdq } : {}),
        reason: e.reason ?? null,
      });
    if (!r.has_more || !r.entries.length) return all;
  }
}

/** Whether the server documents `dry_run` on POST /api/admin/blocklist: one that does not would add the entries. */
async function offersDryRun(client: ApiClient): Promise<boolean> {
  const r = await client.request('GET', '/api/openapi.json').catch(() => null);
  if (!r || r.status !== 200 || typeof r.body !== 'object') return false;
  const doc = r.body as { paths?: Record<string, any>; components?: { parameters?: Record<string, any> } };
  const params = (doc.paths?.['/api/admin/blocklist']?.post?.parameters ?? []) as Array<Record<string, unknown>>;
  return params.some((p) => {
    const ref = typeof p.$ref === 'string' ? doc.components?.parameters?.[p.$ref.split('/').pop()!] : p;
    return ref?.name === 'dry_run' && ref?.in === 'query';
  });
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** hma-csv rows of signal types the blocklist does not hold (`md5: 3, url: 1`), with what goes around them. */
function otherNote(other: Record<string, number>, before: string, after = ''): string {
  const parts = Object.entries(other).map(([type, n]) => `${type || '(none)'}: ${n}`);
  if (!parts.length) return '';
  const n = Object.values(other).reduce((a, b) => a + b, 0);
  return `${before}${plural(n, 'row')} of other signal types left out, ${parts.join(', ')}${after}`;
}

export async function runImport(
  client: ApiClient,
  req: { file: string; format: BlocklistFormat; dryRun: boolean; reason: string | null },
  out: Output,
): Promise<number> {
  const { total, unique, repeated, otherSignals } = await readEntries(req.file, req.format, req.reason);
  const chunks = chunkEntries(unique.map(wireEntry), (e) => JSON.stringify(e).length);
  const repeatedNote =
    (repeated ? `; ${plural(repeated, 'line')} repeating an earlier one sent once` : '') +
    otherNote(otherSignals, '; ');

  if (req.dryRun) {
    let added = 0;
    let skipped = 0;
    let matches: number | null = null;
    if (await offersDryRun(client)) {
      matches = 0;
      for (const entries of chunks) {
        const r = (await client.call('POST', '/api/admin/blocklist?dry_run=true', { json: { entries } })) as {
          added: number;
          skipped: number;
          matches?: number;
        };
        added += r.added;
        skipped += r.skipped;
        matches += r.matches ?? 0;
      }
    } else {
      const present = new Set((await fetchBlocklist(client)).map(entryKey));
      skipped = unique.filter((e) => present.has(entryKey(e))).length;
      added = unique.length - skipped;
    }
    out.write(
      `dry run, nothing changed: ${plural(total, 'entry', 'entries')} in ${req.file}: ${added} new, ` +
        `${skipped} already on the blocklist${repeatedNote}\n` +
        (matches === null
          ? 'this server offers no dry run: how many existing uploads the new entries would hold is not known\n'
          : `${plural(matches, 'existing upload')} would be held\n`),
    );
    return 0;
  }

  const tty = Boolean(out.isTTY) && chunks.length > 1;
  const startedAt = Date.now();
  let added = 0;
  let skipped = 0;
  let sent = 0;
  try {
    for (const entries of chunks) {
      const r = (await client.call('POST', '/api/admin/blocklist', { json: { entries } })) as {
        added: number;
        skipped: number;
      };
      added += r.added;
      skipped += r.skipped;
      sent += entries.length;
      if (tty) out.write(`\r\x1b[2K${entriesLine(sent, unique.length, startedAt, Date.now())}`);
      else if (chunks.length > 1) out.write(`sent ${sent}/${unique.length} entries\n`);
    }
  } finally {
    if (tty) out.write('\r\x1b[2K');
    if (sent < unique.length)
      out.write(
        `stopped after ${sent} of ${unique.length} entries (${added} added, ${skipped} skipped); ` +
          'running the import again skips what is already listed\n',
      );
  }
  out.write(`imported ${req.file}: ${added} added, ${skipped} skipped (already on the blocklist)${repeatedNote}\n`);
  return 0;
}

/** Written beside the file and renamed over it: a reader never sees half a file, a failure leaves the old one. */
export async function writeAtomically(file: string, text: string): Promise<void> {
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  try {
    await writeFile(tmp, text);
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new CliError(`cannot write ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, 1);
  }
}

export async function runExport(
  client: ApiClient,
  req: { file: string; format: BlocklistFormat },
  out: Output,
): Promise<number> {
  const entries = await fetchBlocklist(client);
  await writeAtomically(req.file, formatBlocklist(entries, req.format));
  if (req.format !== 'hma-csv') {
    out.write(`exported ${plural(entries.length, 'entry', 'entries')} to ${req.file}\n`);
    return 0;
  }
  const pdq = entries.filter((e) => e.pdq).length;
  const left = entries.length - pdq;
  out.write(
    `exported ${plural(pdq, 'PDQ entry', 'PDQ entries')} to ${req.file}` +
      (left ? ` (${plural(left, 'entry', 'entries')} without a PDQ left out: hma-csv carries PDQ only)` : '') +
      '\n',
  );
  return 0;
}
