/**
 * The security headers of every response, as helmet (a maintained set of defaults) computes them for an API
 * that serves JSON and user images: nothing is sniffed, framed or scripted (API.md: `X-Content-Type-Options:
 * nosniff`, `Content-Security-Policy: default-src 'none'`). A route that serves HTML (the API reference page)
 * replaces the Content-Security-Policy itself.
 *
 * helmet's middleware sets the same headers on every response whenever no option is a function of the request
 * (none is here), so it runs once, at start-up, against a response that records them; each request then gets
 * the recorded list (running helmet's chain of a dozen middlewares per request would cost a few µs of every
 * cached feed read). Errors answered below the app (src/server.ts) send the same list.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

type NodeMiddleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** The headers a helmet middleware sets, in its order (a header it removes is left out). */
export function headersSetBy(middleware: NodeMiddleware): ReadonlyArray<readonly [string, string]> {
  const headers = new Map<string, string>();
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers.set(name, Array.isArray(value) ? value.join(', ') : String(value));
      return recorder;
    },
    removeHeader(name: string) {
      headers.delete(name);
    },
  };
  let finished = false;
  middleware({ headers: {} } as IncomingMessage, recorder as unknown as ServerResponse, (err) => {
    if (err) throw err;
    finished = true;
  });
  // Every helmet middleware is synchronous; one that is not would leave this list incomplete.
  if (!finished) throw new Error('helmet did not finish synchronously: its headers cannot be computed once');
  return Object.freeze([...headers].map(([name, value]) => Object.freeze([name, value] as const)));
}

/** Every response: helmet's defaults, with a CSP that allows nothing, no framing at all, and HSTS apart. */
export const SECURITY_HEADERS = headersSetBy(
  helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    xFrameOptions: { action: 'deny' },
    // Images may be embedded by the site's own front end on a sibling origin.
    crossOriginResourcePolicy: { policy: 'same-site' },
    // Sent only over TLS (HSTS_HEADER): on plain HTTP it means nothing, and behind a proxy the proxy decides.
    strictTransportSecurity: false,
  }),
);

/** Strict-Transport-Security, for requests that arrived over TLS. */
export const HSTS_HEADER = headersSetBy(helmet.strictTransportSecurity({ maxAge: 31_536_000, includeSubDomains: true }))[0]!;
