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
    if (err) throw err instanceof Error ? err : new Error('helmet failed', { cause: err });
    finished = true;
  });
  // Every helmet middleware is synchronous; one that is not would leave this list incomplete.
  if (!finished) throw new Error('helmet did not finish synchronously: its headers cannot be computed once');
  return Object.freeze([...headers].map(([name, value]) => Object.freeze([name, value] as const)));
}

/**
 * Every response: helmet's headers that matter for JSON and images — a CSP that allows nothing, nosniff, no
 * framing at all, no referrer, same-site resource policy — and HSTS apart. helmet's others only act on an HTML
 * document (or on legacy clients: IE8, Flash) and each costs about 0.4 µs of every response (a cached feed read
 * is about 20 µs): they go on the one HTML page, the API reference (DOCUMENT_HEADERS).
 */
const HTML_ONLY = {
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
} as const;

const API_OPTIONS = {
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  xFrameOptions: { action: 'deny' },
  // Images may be embedded by the site's own front end on a sibling origin.
  crossOriginResourcePolicy: { policy: 'same-site' },
  // Sent only over TLS (HSTS_HEADER): on plain HTTP it means nothing, and behind a proxy the proxy decides.
  strictTransportSecurity: false,
} as const;

export const SECURITY_HEADERS = headersSetBy(helmet({ ...API_OPTIONS, ...HTML_ONLY }));

/** What helmet adds for an HTML document, on top of SECURITY_HEADERS (the reference page sets these too). */
export const DOCUMENT_HEADERS = (() => {
  const api = new Set(SECURITY_HEADERS.map(([name]) => name));
  return headersSetBy(helmet(API_OPTIONS)).filter(([name]) => !api.has(name));
})();

/** Strict-Transport-Security, for requests that arrived over TLS. */
export const HSTS_HEADER = headersSetBy(
  helmet.strictTransportSecurity({ maxAge: 31_536_000, includeSubDomains: true }),
)[0]!;
