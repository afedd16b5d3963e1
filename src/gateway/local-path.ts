/**
 * Where a visitor may be sent back to (issue 44): the one check of every redirect target the service or its pages
 * take from a request (the sign-in page's `next`, web/pages/auth.js; the server's own redirects, web.routes.ts).
 *
 * The pages import it as the module `web/lib/local-path.js`, which src/gateway/web-assets.ts generates from this
 * file (its types stripped), so the browser and the server run the same function. It uses nothing but the WHATWG
 * URL parser the browser uses, and imports nothing.
 */

/**
 * `target` as a path of `origin` (`/new?tab=1#top`), or `/` when it would lead anywhere else.
 *
 * The target is read as the browser reads it: resolved by the URL parser (which drops tabs and newlines, reads a
 * backslash as a slash and removes dot segments), and kept only when it stays on `origin`. What is returned is the
 * resolved path, query and fragment, never a network-path reference: a path that resolves to `//evil.example/x`
 * (`/.//evil.example/x`, `/a/..//evil.example/x`, `/%2e//evil.example/x`) names another host when used as a link
 * or `Location`, so it is refused too.
 */
export function localPath(target: unknown, origin: string): string {
  if (typeof target !== 'string' || !target.startsWith('/')) return '/';
  let url: URL;
  try {
    url = new URL(target, origin);
  } catch {
    return '/'; // `//[` and the like: no URL at all
  }
  if (url.origin !== new URL(origin).origin) return '/';
  const path = url.pathname + url.search + url.hash;
  // The parser leaves no backslash, tab or newline in the path of an http(s) URL; checked all the same.
  return /^\/(?![/\\])/.test(path) && !/[\t\n\r]/.test(path) ? path : '/';
}
