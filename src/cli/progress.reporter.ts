/**
 * Upload progress: on a terminal, one bar redrawn in place (files, bytes, rate, ETA) with messages printed
 * above it; otherwise plain lines, one per event, fit for logs and CI.
 */

export interface ProgressState {
  totalFiles: number;
  totalBytes: number;
  doneFiles: number;
  doneBytes: number;
  failed: number;
  startedAt: number;
  /** Time spent waiting out Retry-After (finished waits): not counted in the rate. */
  pausedMs?: number;
  /** The wait in force, if any: from, until, and why. */
  wait?: { from: number; until: number; reason: string } | null;
}

export interface Output {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '--:--';
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

/**
 * Bytes per second while sending (time spent waiting out a Retry-After does not count), and the time left:
 * what remains of the wait in force plus the bytes left at that rate.
 */
export function rateAndEta(p: ProgressState, now: number): { rate: number; etaMs: number } {
  const w = p.wait;
  const paused = (p.pausedMs ?? 0) + (w && now > w.from ? Math.min(now, w.until) - w.from : 0);
  const elapsed = Math.max(1, now - p.startedAt - paused);
  const rate = (p.doneBytes * 1000) / elapsed;
  const left = p.totalBytes - p.doneBytes;
  const waitLeft = w && w.until > now ? w.until - now : 0;
  return { rate, etaMs: left <= 0 ? 0 : rate > 0 ? waitLeft + (left / rate) * 1000 : Infinity };
}

export function statusLine(p: ProgressState, now: number, width = 80): string {
  const { rate, etaMs } = rateAndEta(p, now);
  const text =
    ` ${p.doneFiles}/${p.totalFiles} files  ${formatBytes(p.doneBytes)}/${formatBytes(p.totalBytes)}` +
    `  ${formatBytes(Math.round(rate))}/s  ETA ${formatDuration(etaMs)}${p.failed ? `  ${p.failed} failed` : ''}` +
    (p.wait && p.wait.until > now ? `  waiting ${formatDuration(p.wait.until - now)} (${p.wait.reason})` : '');
  const barWidth = Math.max(10, Math.min(40, width - text.length - 3));
  const ratio = p.totalBytes > 0 ? p.doneBytes / p.totalBytes : p.totalFiles > 0 ? p.doneFiles / p.totalFiles : 1;
  const filled = Math.round(barWidth * Math.min(1, ratio));
  return `[${'#'.repeat(filled)}${'-'.repeat(barWidth - filled)}]${text}`;
}

export class ProgressReporter {
  readonly #out: Output;
  readonly #tty: boolean;
  readonly #state: ProgressState;
  #lastDraw = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(out: Output, totals: { files: number; bytes: number }, now = Date.now()) {
    this.#out = out;
    this.#tty = Boolean(out.isTTY);
    this.#state = {
      totalFiles: totals.files,
      totalBytes: totals.bytes,
      doneFiles: 0,
      doneBytes: 0,
      failed: 0,
      startedAt: now,
      pausedMs: 0,
      wait: null,
    };
    // Keeps rate and ETA moving while a large file is in flight.
    if (this.#tty) this.#timer = setInterval(() => this.#draw(true), 1000).unref();
  }

  get state(): Readonly<ProgressState> {
    return this.#state;
  }

  /** Every request waits until `until` (a Retry-After); the rate leaves the wait out and the ETA adds it. */
  waiting(until: number, reason: string, now = Date.now()): void {
    this.#settle(now);
    const w = this.#state.wait;
    if (w) this.#state.wait = { from: w.from, until: Math.max(w.until, until), reason };
    else this.#state.wait = { from: now, until, reason };
    this.#draw(true);
  }

  /** A wait that is over is folded into the paused time. */
  #settle(now: number): void {
    const w = this.#state.wait;
    if (w && w.until <= now) {
      this.#state.pausedMs = (this.#state.pausedMs ?? 0) + (w.until - w.from);
      this.#state.wait = null;
    }
  }

  /** A file is finished (whatever the outcome); `line` says how. */
  fileDone(bytes: number, failed: boolean, line: string): void {
    this.#settle(Date.now());
    this.#state.doneFiles++;
    this.#state.doneBytes += bytes;
    if (failed) this.#state.failed++;
    if (this.#tty) return this.message(line);
    const p = this.#state;
    const { rate, etaMs } = rateAndEta(p, Date.now());
    const where =
      `${formatBytes(p.doneBytes)}/${formatBytes(p.totalBytes)}, ` +
      `${formatBytes(Math.round(rate))}/s, ETA ${formatDuration(etaMs)}`;
    this.message(`[${p.doneFiles}/${p.totalFiles}] ${line}  (${where})`);
  }

  /** A line of its own (a retry, a warning); on a terminal printed above the bar. */
  message(line: string): void {
    if (this.#tty) {
      this.#out.write(`\r\x1b[2K${line}\n`);
      this.#draw(true);
    } else this.#out.write(`${line}\n`);
  }

  #draw(force: boolean): void {
    const now = Date.now();
    if (!this.#tty || (!force && now - this.#lastDraw < 100)) return;
    this.#lastDraw = now;
    this.#out.write(`\r\x1b[2K${statusLine(this.#state, now, this.#out.columns ?? 80)}`);
  }

  /** Clears the bar (the summary follows). */
  finish(): void {
    if (this.#timer) clearInterval(this.#timer);
    if (this.#tty) this.#out.write(`\r\x1b[2K`);
  }
}
