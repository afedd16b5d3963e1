/** A thread of the password-hash pool: one synchronous scrypt per task, on this thread and not libuv's threadpool. */
import { scryptSync } from 'node:crypto';
import type { ScryptJob } from '../domain/auth/passwords.ts';

export interface ScryptTask extends ScryptJob {
  password: string;
  salt: Uint8Array;
  keylen: number;
}

export default function derive({ password, salt, keylen, N, r, p, maxmem }: ScryptTask): Uint8Array {
  return scryptSync(password, salt, keylen, { N, r, p, maxmem });
}
