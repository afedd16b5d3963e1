import type { AppContext } from './context.ts';

/**
 * The scheme and host the client named this service by, for absolute URLs (the Atom feed's links, an upload
 * page's Open Graph metadata, oEmbed): X-Forwarded-Proto/-Host when TRUST_PROXY trusts the proxy (Koa's
 * `proxy` setting), else the connection's own. There is no configured public URL.
 * (Not ctx.origin: in Koa 3 that is the request's Origin header.)
 */
export function requestOrigin(ctx: AppContext): string {
  return `${ctx.protocol}://${ctx.host}`;
}
