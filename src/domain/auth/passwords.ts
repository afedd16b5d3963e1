/**
 * Password hashing with scrypt (N=2^17, r=8, p=1: 128 MiB and a few hundred ms per hash). Parameters are stored with
 * each hash so they can be raised later. The key derivation itself is a port (ScryptKdf): production runs it on a
 * small dedicated thread pool (src/workers/password-hash.pool.ts), never on libuv's threadpool, which file reads and
 * DNS lookups share — a login burst there stalled image GETs for seconds.
 */
import { randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/** What a key derivation needs: the parameters and the memory cap that admits them. */
export interface ScryptJob extends ScryptParams {
  maxmem: number;
}

/** The port: derives a scrypt key of `keylen` bytes. */
export interface ScryptKdf {
  derive(password: string, salt: Buffer, keylen: number, job: ScryptJob): Promise<Buffer>;
}

/** Node's async scrypt, which runs on libuv's threadpool: for unit tests and tools, not for the server. */
export const libuvScrypt: ScryptKdf = {
  derive: (password, salt, keylen, job) =>
    new Promise<Buffer>((resolve, reject) =>
      scryptCb(password, salt, keylen, job, (err, key) => (err ? reject(err) : resolve(key))),
    ),
};

export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 17, r: 8, p: 1 };
const KEY_LENGTH = 32;

const jobFor = ({ N, r, p }: ScryptParams): ScryptJob => ({ N, r, p, maxmem: 128 * N * r + 16 * 1024 * 1024 });

/** `scrypt$N$r$p$salt$hash`, salt and hash base64url. */
export async function hashPassword(
  password: string,
  params: ScryptParams = DEFAULT_SCRYPT,
  kdf: ScryptKdf = libuvScrypt,
): Promise<string> {
  const salt = randomBytes(16);
  const key = await kdf.derive(password, salt, KEY_LENGTH, jobFor(params));
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/**
 * A stored hash in every way but one: its key is random bytes, not the result of a password, so no password matches
 * it. Checking a password against it costs exactly what checking a real one costs (the same N, r, p and lengths),
 * and making it costs nothing (a real hash of a random password cost a full scrypt at every start).
 */
export function decoyHash(params: ScryptParams = DEFAULT_SCRYPT): string {
  const [salt, key] = [randomBytes(16), randomBytes(KEY_LENGTH)];
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Constant-time check of a password against a stored hash. A malformed hash never matches. */
export async function verifyPassword(password: string, stored: string, kdf: ScryptKdf = libuvScrypt): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  const key = await kdf.derive(password, salt, expected.length, jobFor({ N, r, p }));
  return key.length === expected.length && timingSafeEqual(key, expected);
}
