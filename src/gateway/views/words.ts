/**
 * Words the pages write from data: counts, ages, dates, a URL's host. Used by the views (card-view.ts, …) on both
 * sides and by web/lib/dom.js; served to the pages as web/lib/words.js, generated from this file.
 */

/** "1 minute", "3 minutes". */
export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** How long ago, in words, by whole minutes ("just now", "1 minute ago", "3 hours ago", "2 days ago"). */
export function ago(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const minutes = Math.floor((now - t) / 60_000);
  if (minutes < 1) return 'just now';
  if (minutes < 60) return `${plural(minutes, 'minute', 'minutes')} ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${plural(hours, 'hour', 'hours')} ago`;
  const days = Math.floor(hours / 24);
  if (days < 30) return `${plural(days, 'day', 'days')} ago`;
  if (days < 365) return `${plural(Math.floor(days / 30), 'month', 'months')} ago`;
  return `${plural(Math.floor(days / 365), 'year', 'years')} ago`;
}

/** The full date of an ISO time, the same in every locale and time zone ("2026-11-27 09:30 UTC"), or null. */
export function utcDate(iso: string): string | null {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A URL's host, or '' for what is no URL. */
export function hostOf(url: string | null | undefined): string {
  try {
    return new URL(String(url)).host;
  } catch {
    return '';
  }
}
