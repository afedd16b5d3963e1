/**
 * Errors of page routes are pages (issue 30, API.md "Pages and the open web"): a browser asking for a page (GET or
 * HEAD, `Accept: text/html`, a path outside the API and the other machine-read paths) gets an HTML page with the
 * right status (404, 410, 429 with its wait, 503…) and the site's header, instead of the contract's JSON body.
 * Everything else, `/api/*` first, keeps JSON.
 */
import type { AppError } from '../domain/errors.ts';
import { escapeHtml } from './web-render.ts';

/** Paths read by programs, not people: their errors stay JSON whatever the Accept header says. */
const MACHINE_PATHS = /^\/(api|assets|metrics|healthz|readyz|feed\.atom|favicon\.ico)(\/|$)/;

export function wantsErrorPage(method: string, path: string, accept: string): boolean {
  return (method === 'GET' || method === 'HEAD') && !MACHINE_PATHS.test(path) && /\btext\/html\b/.test(accept);
}

/** A wait in words: "5 seconds", "3 minutes", "2 hours". */
export function waitInWords(seconds: number): string {
  const unit = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  if (seconds < 90) return unit(Math.max(1, Math.round(seconds)), 'second');
  if (seconds < 90 * 60) return unit(Math.round(seconds / 60), 'minute');
  return unit(Math.round(seconds / 3600), 'hour');
}

/** The heading and the sentence a person reads for each status. */
function words(e: AppError): { title: string; text: string } {
  const retry = Number(e.headers['Retry-After'] ?? 0);
  switch (e.status) {
    case 404:
      return {
        title: 'Page not found',
        text: 'There is nothing at this address. It may have been deleted, or the link is mistyped.',
      };
    case 410:
      return { title: 'Removed', text: 'The moderators removed this. The moderation log says why.' };
    case 429:
      return {
        title: 'Too many requests',
        text: `You have made many requests in a short time. Please wait ${waitInWords(retry || 1)} and try again.`,
      };
    case 503:
      return {
        title: 'Busy right now',
        text: `pixvote cannot answer right now. Please try again in ${waitInWords(retry || 1)}.`,
      };
    case 500:
      return { title: 'Something went wrong', text: 'An error on our side. Please try again in a moment.' };
    default:
      // A 4xx the visitor's request caused: the contract's message names what was wrong.
      return { title: 'This request cannot be answered', text: e.message };
  }
}

/** The error page: the site's header and stylesheet, the status in words, a way back to the feed. */
export function errorPageHtml(e: AppError, stylesheet: string | null, requestId?: string): string {
  const { title, text } = words(e);
  const more = e.code === 'removed' ? '<a href="/modlog">Moderation log</a> · ' : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)} · pixvote</title>
${stylesheet ? `<link rel="stylesheet" href="${escapeHtml(stylesheet)}">\n` : ''}</head>
<body data-page="error" data-status="${e.status}">
<header class="top"><a class="brand" href="/">pixvote</a>\
<nav aria-label="Main"><a href="/">Feed</a><a href="/docs">API</a></nav></header>
<main id="main"><h1>${escapeHtml(title)}</h1>
<p class="alert error">${escapeHtml(text)}</p>
<p>${more}<a href="/">Back to the feed</a></p>${
    requestId && e.status >= 500 ? `\n<p class="meta">Request id: <code>${escapeHtml(requestId)}</code></p>` : ''
  }</main>
</body>
</html>
`;
}
