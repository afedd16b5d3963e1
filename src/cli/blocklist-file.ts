/**
 * Blocklist files for `pixvote mod blocklist import|export`: CSV with the header `sha256,phash,reason` (and a
 * `pdq` column when an entry has a PDQ), JSON (an array of entries, or `{"entries": [...]}`), or `hma-csv`: the
 * CSV python-threatexchange writes (`threatexchange dataset -P --csv`, columns
 * `collab,signal_type,signal_str,category,tags`), the shape Hasher-Matcher-Actioner banks exchange. Its `pdq` rows
 * become PDQ entries (reason: the tags, else the collaboration); rows of other signal types are counted and left
 * out. A `.csv` file with that header is read as hma-csv. Every entry is checked before anything is sent, and a bad
 * one is reported with the line it is on.
 */
import { extname } from 'node:path';
import { CliError } from './cli-config.store.ts';

export type BlocklistFormat = 'csv' | 'json' | 'hma-csv';

export interface BlocklistEntry {
  sha256: string | null;
  phash: string | null;
  /** Present only when the entry has one (64 hex). */
  pdq?: string;
  reason: string | null;
}

export interface ParsedBlocklist {
  entries: Array<{ line: number; entry: BlocklistEntry }>;
  errors: Array<{ line: number; message: string }>;
  /** hma-csv: rows of signal types the blocklist does not hold, by type. */
  otherSignals?: Record<string, number>;
}

/** python-threatexchange's `dataset -P --csv` header; `signal_type` `pdq` is its PdqSignal. */
export const HMA_CSV_COLUMNS = ['collab', 'signal_type', 'signal_str', 'category', 'tags'] as const;

/** The contract's limit per POST /api/admin/blocklist. */
export const MAX_CHUNK_ENTRIES = 10_000;
/** Below the server's 1 MiB JSON body limit, with room for the wrapper: 10 000 entries with reasons exceed it. */
export const MAX_CHUNK_BYTES = 1_000_000;

export function formatOf(file: string, explicit?: string): BlocklistFormat {
  const f = (explicit ?? extname(file).slice(1)).toLowerCase();
  if (f === 'csv' || f === 'json' || f === 'hma-csv') return f;
  if (explicit !== undefined) throw new CliError(`--format must be csv, json or hma-csv (got "${explicit}")`);
  throw new CliError(`cannot tell the format of ${file} by its extension: pass --format csv or --format json`);
}

export interface CsvRecords {
  records: Array<{ line: number; fields: string[] }>;
  /** A quoted field still open at the end of the text: the line it opened on. */
  unclosedAt?: number;
}

/**
 * RFC 4180 records: quoted fields may hold commas, doubled quotes and line breaks. Each with its first line. A
 * record ends at CRLF, LF or a lone CR (python's csv writes CRLF); inside quotes a line break is the field's own
 * text and is kept as written (a reason holding CRLF is read back with its CR).
 */
export function parseCsv(input: string): CsvRecords {
  const text = input.replace(/^\uFEFF/, '');
  const records: CsvRecords['records'] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let start = 1;
  let openedAt = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    // CRLF is one line end; a CR alone is one too.
    const lineEnd = c === '\n' || (c === '\r' && text[i + 1] !== '\n');
    if (quoted) {
      if (lineEnd) line++;
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') field += text[++i];
      else quoted = false;
    } else if (c === '"' && field === '') {
      quoted = true;
      openedAt = line;
    } else if (c === ',') {
      fields.push(field);
      field = '';
    } else if (c === '\r' && !lineEnd) {
      // The CR of a CRLF: its LF ends the record.
    } else if (lineEnd) {
      fields.push(field);
      if (fields.length > 1 || fields[0] !== '') records.push({ line: start, fields });
      fields = [];
      field = '';
      start = ++line;
    } else field += c;
  }
  if (quoted) return { records, unclosedAt: openedAt };
  fields.push(field);
  if (fields.length > 1 || fields[0] !== '') records.push({ line: start, fields });
  return { records };
}

const SHA256 = /^[0-9a-f]{64}$/;
const PHASH = /^[0-9a-f]{16}$/;
const PDQ = SHA256;

/** One entry checked: lowercased hashes, empty fields as null; or what is wrong with it. */
export function checkEntry(sha256: unknown, phash: unknown, reason: unknown, pdq?: unknown): BlocklistEntry | string {
  const str = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'string' ? v.trim() : null);
  const s = str(sha256)?.toLowerCase();
  const p = str(phash)?.toLowerCase();
  const q = str(pdq)?.toLowerCase();
  const r = str(reason);
  if (s === undefined || s === null) return 'sha256 must be a string';
  if (p === undefined || p === null) return 'phash must be a string';
  if (q === undefined || q === null) return 'pdq must be a string';
  if (r === null) return 'reason must be a string';
  if (s && !SHA256.test(s)) return `sha256 "${s.slice(0, 80)}" is not 64 hex digits`;
  if (p && !PHASH.test(p)) return `phash "${p.slice(0, 40)}" is not 16 hex digits`;
  if (q && !PDQ.test(q)) return `pdq "${q.slice(0, 80)}" is not 64 hex digits`;
  if (!s && !p && !q) return 'neither sha256, phash nor pdq: an entry needs at least one';
  return { sha256: s || null, phash: p || null, ...(q ? { pdq: q } : {}), reason: r || null };
}

function parseCsvEntries(text: string, hmaOnly = false): ParsedBlocklist {
  const out: ParsedBlocklist = { entries: [], errors: [] };
  const { records, unclosedAt } = parseCsv(text);
  if (unclosedAt) {
    out.errors.push({ line: unclosedAt, message: 'a quoted field is never closed' });
    return out;
  }
  const [header, ...rows] = records;
  if (!header) return out;
  const names = header.fields.map((f) => f.trim().toLowerCase());
  const col = (n: string) => names.indexOf(n);
  const hma = col('signal_type') >= 0 && col('signal_str') >= 0;
  if (hmaOnly && !hma) {
    out.errors.push({ line: header.line, message: `the first line must be the header ${HMA_CSV_COLUMNS.join(',')}` });
    return out;
  }
  if (!hma && col('sha256') < 0 && col('phash') < 0 && col('pdq') < 0) {
    out.errors.push({
      line: header.line,
      message: `the first line must be the header sha256,phash,reason (or hma-csv's ${HMA_CSV_COLUMNS.join(',')})`,
    });
    return out;
  }
  for (const { line, fields } of rows) {
    if (fields.length !== names.length) {
      out.errors.push({ line, message: `${fields.length} fields; the header has ${names.length}` });
      continue;
    }
    const at = (n: string) => (col(n) < 0 ? '' : fields[col(n)]);
    if (hma) {
      const type = at('signal_type')!.trim().toLowerCase();
      if (type !== 'pdq') {
        out.otherSignals = { ...out.otherSignals, [type]: (out.otherSignals?.[type] ?? 0) + 1 };
        continue;
      }
      const reason = at('tags')!.trim() || at('collab')!.trim();
      const e = checkEntry('', '', reason, at('signal_str'));
      if (typeof e === 'string') out.errors.push({ line, message: e });
      else out.entries.push({ line, entry: e });
      continue;
    }
    const e = checkEntry(at('sha256'), at('phash'), at('reason'), at('pdq'));
    if (typeof e === 'string') out.errors.push({ line, message: e });
    else out.entries.push({ line, entry: e });
  }
  return out;
}

/** The line each element of the top-level array starts on (the JSON is known to be valid). */
function elementLines(text: string, arrayStart: number): number[] {
  const lines: number[] = [];
  let line = 1 + (text.slice(0, arrayStart).match(/\n/g)?.length ?? 0);
  let depth = 0;
  let inString = false;
  let expecting = true;
  for (let i = arrayStart + 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\n') line++;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (/\s/.test(c)) continue;
    if (depth === 0 && c === ']') break;
    if (depth === 0 && c === ',') {
      expecting = true;
      continue;
    }
    if (depth === 0 && expecting) {
      lines.push(line);
      expecting = false;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth--;
  }
  return lines;
}

function parseJsonEntries(text: string): ParsedBlocklist {
  const out: ParsedBlocklist = { entries: [], errors: [] };
  let doc: unknown;
  try {
    doc = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    const m = (e as Error).message;
    const lineOf = /\(line (\d+) column/.exec(m)?.[1];
    const pos = /at position (\d+)/.exec(m)?.[1];
    const line = lineOf ? Number(lineOf) : pos ? text.slice(0, Number(pos)).split('\n').length : 1;
    out.errors.push({ line, message: `not valid JSON: ${m.replace(/ in JSON at position.*$/, '')}` });
    return out;
  }
  const list = Array.isArray(doc) ? doc : (doc as { entries?: unknown } | null)?.entries;
  if (!Array.isArray(list)) {
    out.errors.push({ line: 1, message: 'expected an array of entries or {"entries": [...]}' });
    return out;
  }
  const arrayStart = Array.isArray(doc) ? text.indexOf('[') : entriesArrayStart(text);
  const lines = elementLines(text, arrayStart);
  list.forEach((item: unknown, i) => {
    const line = lines[i] ?? 1;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      out.errors.push({ line, message: `entry ${i + 1} is not an object` });
      return;
    }
    const o = item as Record<string, unknown>;
    const e = checkEntry(o.sha256, o.phash, o.reason, o.pdq);
    if (typeof e === 'string') out.errors.push({ line, message: `entry ${i + 1}: ${e}` });
    else out.entries.push({ line, entry: e });
  });
  return out;
}

/** Where the `entries` array of `{"entries": [...]}` opens: the `[` after the top-level key. */
function entriesArrayStart(text: string): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const end = stringEnd(text, i);
      if (depth === 1 && JSON.parse(text.slice(i, end + 1)) === 'entries') return text.indexOf('[', end);
      i = end;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return 0;
}

function stringEnd(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  return text.length - 1;
}

export function parseBlocklist(text: string, format: BlocklistFormat): ParsedBlocklist {
  return format === 'json' ? parseJsonEntries(text) : parseCsvEntries(text, format === 'hma-csv');
}

const csvField = (v: string | null) =>
  v === null ? '' : /[",\r\n]|^\s|\s$/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;

/** The CSV's lines, each ending in a newline. */
const csvLines = (rows: Array<Array<string | null>>) => rows.map((r) => `${r.map(csvField).join(',')}\n`).join('');

/**
 * The file's text. `csv` gains a last column `pdq` when an entry has one (readers by header or by position of the
 * first three are unaffected). `hma-csv` holds the PDQ entries only (the caller says how many others were left).
 */
export function formatBlocklist(entries: BlocklistEntry[], format: BlocklistFormat): string {
  if (format === 'json') {
    const rows = entries.map(
      (e) =>
        `  ${JSON.stringify({ sha256: e.sha256, phash: e.phash, ...(e.pdq ? { pdq: e.pdq } : {}), reason: e.reason })}`,
    );
    return rows.length ? `[\n${rows.join(',\n')}\n]\n` : '[]\n';
  }
  if (format === 'hma-csv')
    return csvLines([
      [...HMA_CSV_COLUMNS],
      ...entries.filter((e) => e.pdq).map((e) => ['pixvote', 'pdq', e.pdq!, 'POSITIVE_CLASS', e.reason]),
    ]);
  if (!entries.some((e) => e.pdq))
    return csvLines([['sha256', 'phash', 'reason'], ...entries.map((e) => [e.sha256, e.phash, e.reason])]);
  return csvLines([
    ['sha256', 'phash', 'reason', 'pdq'],
    ...entries.map((e) => [e.sha256, e.phash, e.reason, e.pdq ?? null]),
  ]);
}

/** Same hashes, same entry: the key repeated lines and the server's existing entries are compared by. */
export const entryKey = (e: BlocklistEntry): string => `${e.sha256 ?? ''}:${e.phash ?? ''}${e.pdq ? `:${e.pdq}` : ''}`;

/** The body of one POST: only the fields an entry has. */
export function wireEntry(e: BlocklistEntry): Record<string, string> {
  return {
    ...(e.sha256 ? { sha256: e.sha256 } : {}),
    ...(e.phash ? { phash: e.phash } : {}),
    ...(e.pdq ? { pdq: e.pdq } : {}),
    ...(e.reason ? { reason: e.reason } : {}),
  };
}

/** Consecutive chunks of at most `maxEntries` entries whose JSON body stays under `maxBytes`. */
export function chunkEntries<T>(
  items: T[],
  size: (item: T) => number,
  maxEntries = MAX_CHUNK_ENTRIES,
  maxBytes = MAX_CHUNK_BYTES,
): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const n = size(item) + 1;
    if (current.length && (current.length >= maxEntries || bytes + n > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += n;
  }
  if (current.length) chunks.push(current);
  return chunks;
}
