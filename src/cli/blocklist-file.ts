/**
 * Blocklist files for `pixvote mod blocklist import|export`: CSV with the header `sha256,phash,reason`, or JSON
 * (an array of entries, or `{"entries": [...]}`). Every entry is checked before anything is sent, and a bad one is
 * reported with the line it is on.
 */
import { extname } from 'node:path';
import { CliError } from './cli-config.store.ts';

export type BlocklistFormat = 'csv' | 'json';

export interface BlocklistEntry {
  sha256: string | null;
  phash: string | null;
  reason: string | null;
}

export interface ParsedBlocklist {
  entries: Array<{ line: number; entry: BlocklistEntry }>;
  errors: Array<{ line: number; message: string }>;
}

/** The contract's limit per POST /api/admin/blocklist. */
export const MAX_CHUNK_ENTRIES = 10_000;
/** Below the server's 1 MiB JSON body limit, with room for the wrapper: 10 000 entries with reasons exceed it. */
export const MAX_CHUNK_BYTES = 1_000_000;

export function formatOf(file: string, explicit?: string): BlocklistFormat {
  const f = (explicit ?? extname(file).slice(1)).toLowerCase();
  if (f === 'csv' || f === 'json') return f;
  if (explicit !== undefined) throw new CliError(`--format must be csv or json (got "${explicit}")`);
  throw new CliError(`cannot tell the format of ${file} by its extension: pass --format csv or --format json`);
}

export interface CsvRecords {
  records: Array<{ line: number; fields: string[] }>;
  /** A quoted field still open at the end of the text: the line it opened on. */
  unclosedAt?: number;
}

/** RFC 4180 records: quoted fields may hold commas, doubled quotes and line breaks. Each with its first line. */
export function parseCsv(input: string): CsvRecords {
  const text = input.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const records: CsvRecords['records'] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let start = 1;
  let openedAt = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '\n') line++;
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') field += text[++i];
      else quoted = false;
    } else if (c === '"' && field === '') {
      quoted = true;
      openedAt = line;
    } else if (c === ',') {
      fields.push(field);
      field = '';
    } else if (c === '\n') {
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

/** One entry checked: lowercased hashes, empty fields as null; or what is wrong with it. */
export function checkEntry(sha256: unknown, phash: unknown, reason: unknown): BlocklistEntry | string {
  const str = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'string' ? v.trim() : null);
  const s = str(sha256)?.toLowerCase();
  const p = str(phash)?.toLowerCase();
  const r = str(reason);
  if (s === undefined || s === null) return 'sha256 must be a string';
  if (p === undefined || p === null) return 'phash must be a string';
  if (r === null) return 'reason must be a string';
  if (s && !SHA256.test(s)) return `sha256 "${s.slice(0, 80)}" is not 64 hex digits`;
  if (p && !PHASH.test(p)) return `phash "${p.slice(0, 40)}" is not 16 hex digits`;
  if (!s && !p) return 'neither sha256 nor phash: an entry needs at least one';
  return { sha256: s || null, phash: p || null, reason: r || null };
}

function parseCsvEntries(text: string): ParsedBlocklist {
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
  if (col('sha256') < 0 && col('phash') < 0) {
    out.errors.push({ line: header.line, message: 'the first line must be the header sha256,phash,reason' });
    return out;
  }
  for (const { line, fields } of rows) {
    if (fields.length !== names.length) {
      out.errors.push({ line, message: `${fields.length} fields; the header has ${names.length}` });
      continue;
    }
    const at = (n: string) => (col(n) < 0 ? '' : fields[col(n)]);
    const e = checkEntry(at('sha256'), at('phash'), at('reason'));
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
    const e = checkEntry(o.sha256, o.phash, o.reason);
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
  return format === 'json' ? parseJsonEntries(text) : parseCsvEntries(text);
}

const csvField = (v: string | null) =>
  v === null ? '' : /[",\r\n]|^\s|\s$/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;

export function formatBlocklist(entries: BlocklistEntry[], format: BlocklistFormat): string {
  if (format === 'json') {
    const rows = entries.map((e) => `  ${JSON.stringify({ sha256: e.sha256, phash: e.phash, reason: e.reason })}`);
    return rows.length ? `[\n${rows.join(',\n')}\n]\n` : '[]\n';
  }
  return ['sha256,phash,reason', ...entries.map((e) => [e.sha256, e.phash, e.reason].map(csvField).join(','))]
    .map((l) => `${l}\n`)
    .join('');
}

/** Same hashes, same entry: the key repeated lines and the server's existing entries are compared by. */
export const entryKey = (e: BlocklistEntry): string => `${e.sha256 ?? ''}:${e.phash ?? ''}`;

/** The body of one POST: only the fields an entry has. */
export function wireEntry(e: BlocklistEntry): Record<string, string> {
  return {
    ...(e.sha256 ? { sha256: e.sha256 } : {}),
    ...(e.phash ? { phash: e.phash } : {}),
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
