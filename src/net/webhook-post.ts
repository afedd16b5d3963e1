/**
 * Outgoing webhook requests, under the same address rules as `image_url` (safe-fetch.ts): http/https only, no
 * userinfo, every connection checked at connect time (DNS rebinding included) unless FETCH_ALLOW_PRIVATE, the
 * whole request bounded by a timeout, no redirect followed (a 3xx is a failed attempt), and the answer's body
 * discarded.
 */
import net from 'node:net';
import { AppError } from '../domain/errors.ts';
import { isForbiddenAddress, withArticle } from './address-policy.ts';
import { guardedConnector, systemResolver, type Resolver } from './guarded-connector.ts';
import { loadUndici } from './undici.ts';

const MAX_URL_LENGTH = 2048;
const USER_AGENT = 'pixvote-webhooks/0.1';

/**
 * Why `raw` may not receive webhooks, or null: what can be told without a network (scheme, userinfo, length, an
 * address literal or `localhost` outside the public internet). A host name is checked again at every connection.
 */
export function webhookUrlProblem(raw: string, allowPrivate: boolean): string | null {
  if (raw.length > MAX_URL_LENGTH) return `is longer than ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a valid URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be http or https';
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password';
  if (allowPrivate) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) {
    const reason = isForbiddenAddress(host);
    if (reason) return `points to ${withArticle(reason)} address; webhooks go only to public addresses`;
  } else if (/(^|\.)localhost\.?$/i.test(host)) {
    return 'points to localhost; webhooks go only to public addresses';
  }
  return null;
}

export interface PostOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  signal?: AbortSignal;
  /** Test seam: the DNS resolver. */
  resolve?: Resolver;
}

/** POSTs one webhook: the receiver's HTTP status, or throws with a short reason (no internal detail). */
export async function postWebhook(
  rawUrl: string,
  headers: Record<string, string>,
  body: string,
  opts: PostOptions,
): Promise<{ status: number }> {
  const problem = webhookUrlProblem(rawUrl, opts.allowPrivate);
  if (problem) throw new Error(`url ${problem}`);
  const { Agent, request } = await loadUndici();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs);
  const onAbort = () => controller.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const agent = new Agent({
    connect: guardedConnector({
      allowPrivate: opts.allowPrivate,
      policy: isForbiddenAddress,
      resolve: opts.resolve ?? systemResolver,
      signal: controller.signal,
    }),
  });
  try {
    const res = await request(rawUrl, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'user-agent': USER_AGENT },
      body,
      dispatcher: agent,
      signal: controller.signal,
    });
    res.body.on('error', () => {});
    res.body.destroy();
    return { status: res.statusCode };
  } catch (err) {
    if (controller.signal.aborted && !opts.signal?.aborted)
      throw new Error(`no answer within ${opts.timeoutMs} ms`, { cause: err });
    // The guard's own refusals name the rule (they say `image_url`: here it is the endpoint's url).
    if (err instanceof AppError) throw new Error(err.message.replace(/^image_url/, 'url'), { cause: err });
    const code = err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : null;
    throw new Error(`could not be reached${code ? ` (${code})` : ''}`, { cause: err });
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
    agent.destroy().catch(() => {});
  }
}
