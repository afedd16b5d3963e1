import type { IncomingMessage } from 'node:http';

/** How much of a refused request's body is read (and dropped) so the client can read the refusal. */
const DISCARD_MAX_BYTES = 128 * 1024 * 1024;
const DISCARD_MAX_MS = 10_000;

/** Reads and drops the rest of a request's body (bounded in bytes and time); resolves when done. */
export function discardBody(req: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    let bytes = 0;
    const done = () => {
      clearTimeout(timer);
      req.off('data', onData).off('end', done).off('error', done).off('close', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      if ((bytes += chunk.length) > DISCARD_MAX_BYTES) done();
    };
    const timer = setTimeout(done, DISCARD_MAX_MS);
    req.on('data', onData).once('end', done).once('error', done).once('close', done);
    req.resume();
  });
}
