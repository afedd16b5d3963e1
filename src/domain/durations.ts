/** A rate limit: `points` requests per `seconds`. */
export interface Rate {
  points: number;
  seconds: number;
}

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86400 };

/** Parses `90s`, `15m`, `24h`, `7d` (or a bare number of seconds) into seconds; null when malformed. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+)\s*([smhd]?)$/.exec(text.trim());
  if (!m) return null;
  const seconds = Number(m[1]) * (UNIT_SECONDS[m[2] || 's'] ?? 1);
  return seconds >= 1 && Number.isSafeInteger(seconds) ? seconds : null;
}

/** Parses `N/window` such as `20/1h` or `600/15m` (window units s, m, h; `1h` may be written `h`). */
export function parseRate(text: string): Rate | null {
  const m = /^(\d+)\s*\/\s*(\d*)\s*([smh])$/.exec(text.trim());
  if (!m) return null;
  const points = Number(m[1]);
  const seconds = Number(m[2] || '1') * (UNIT_SECONDS[m[3]!] ?? 1);
  return points >= 1 && seconds >= 1 && Number.isSafeInteger(points) ? { points, seconds } : null;
}
