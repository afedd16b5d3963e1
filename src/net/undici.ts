/**
 * undici, loaded on the first outgoing request (an image URL, a webhook delivery) rather than at start: most
 * processes (the tests', the CLI's, a gateway that never fetches) send none, and loading it is ~0.25 s of CPU.
 */
let loading: Promise<typeof import('undici')> | undefined;

export function loadUndici(): Promise<typeof import('undici')> {
  return (loading ??= import('undici'));
}
