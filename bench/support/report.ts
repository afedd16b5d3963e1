/**
 * What a benchmark reports: figures (a median with its spread, a unit, an optional target), printed as one
 * table, as README-ready markdown, and written as JSON to bench/results/<name>-<timestamp>.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import sharp from 'sharp';
import { summarize, type Summary } from './stats.ts';

export interface Target {
  op: '>=' | '<=';
  value: number;
  /** `ci`: bench:ci fails below it; `goal`: reported, never fails. */
  kind: 'ci' | 'goal';
  /** A stricter goal beside a CI floor. */
  goal?: number;
}

export interface Figure {
  bench: string;
  name: string;
  unit: string;
  summary: Summary;
  /** The values the summary was made of (runs, rounds or images). */
  samples: number[];
  target?: Target;
  note?: string;
}

export interface BenchReport {
  name: string;
  command: string;
  startedAt: string;
  seconds: number;
  environment: ReturnType<typeof environment>;
  figures: Figure[];
  notes: string[];
}

export function figure(
  bench: string,
  name: string,
  unit: string,
  samples: readonly number[] | number,
  extra: { target?: Target; note?: string } = {},
): Figure {
  const values = (typeof samples === 'number' ? [samples] : [...samples]).filter(Number.isFinite);
  return {
    bench,
    name,
    unit,
    summary: summarize(values),
    samples: values.map((v) => Number(v.toPrecision(5))),
    ...extra,
  };
}

export const atLeast = (value: number, kind: Target['kind'] = 'goal', goal?: number): Target => ({
  op: '>=',
  value,
  kind,
  ...(goal ? { goal } : {}),
});
export const atMost = (value: number, kind: Target['kind'] = 'goal'): Target => ({ op: '<=', value, kind });

export function meets(f: Figure, value = f.target?.value): boolean | null {
  if (!f.target || value === undefined || !Number.isFinite(f.summary.median)) return null;
  return f.target.op === '>=' ? f.summary.median >= value : f.summary.median <= value;
}

export function environment() {
  return {
    node: process.version,
    cores: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
    sharp: sharp.versions.sharp,
    libvips: sharp.versions.vips,
  };
}

const digits = (x: number): string => {
  if (!Number.isFinite(x)) return '–';
  const a = Math.abs(x);
  return a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : a >= 1 ? x.toFixed(2) : x.toFixed(3);
};

const targetText = (t?: Target) => {
  if (!t) return '';
  const op = t.op === '>=' ? '≥' : '≤';
  return `${op} ${t.value}${t.kind === 'ci' ? ' (CI)' : ''}${t.goal !== undefined ? `, goal ${op} ${t.goal}` : ''}`;
};
const statusText = (f: Figure) => {
  const ok = meets(f);
  if (ok === null) return '';
  if (!ok) return 'MISSED';
  return meets(f, f.target?.goal) === false ? 'below goal' : 'ok';
};

function rows(figures: readonly Figure[]): string[][] {
  return figures.map((f) => [
    f.bench,
    f.name,
    digits(f.summary.median),
    f.summary.n > 1 ? `${digits(f.summary.min)}–${digits(f.summary.max)}` : '',
    String(f.summary.n),
    f.unit,
    targetText(f.target),
    statusText(f),
    f.note ?? '',
  ]);
}

const HEADER = ['bench', 'measure', 'median', 'spread (min–max)', 'n', 'unit', 'target', '', 'note'];

export function table(figures: readonly Figure[]): string {
  const all = [HEADER, ...rows(figures)];
  const widths = HEADER.map((_, c) => Math.max(...all.map((r) => [...r[c]!].length)));
  const right = new Set([2, 3, 4]);
  const line = (r: string[]) =>
    r
      .map((cell, c) => (right.has(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(HEADER), widths.map((w) => '─'.repeat(w)).join('  '), ...all.slice(1).map(line)].join('\n');
}

/** README-ready tables, one per benchmark, each under the command that produced it. */
export function markdown(figures: readonly Figure[], command: string): string {
  const head = ['measure', 'median', 'spread (min–max)', 'n', 'unit', 'target', '', 'note'];
  const out: string[] = [];
  for (const bench of [...new Set(figures.map((f) => f.bench))]) {
    const body = rows(figures.filter((f) => f.bench === bench)).map((r) => r.slice(1));
    out.push(
      `**${bench}** — \`${command}\``,
      '',
      `| ${head.join(' | ')} |`,
      `|${head.map((_, i) => (i >= 1 && i <= 3 ? '---:' : '---')).join('|')}|`,
    );
    out.push(...body.map((r) => `| ${r.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`), '');
  }
  return out.join('\n');
}

export async function writeResults(report: BenchReport): Promise<string> {
  const dir = new URL('../results/', import.meta.url);
  await mkdir(dir, { recursive: true });
  const stamp = report.startedAt.replace(/[:.]/g, '-');
  const file = new URL(`${report.name}-${stamp}.json`, dir);
  await writeFile(file, JSON.stringify(report, null, 2) + '\n');
  return file.pathname;
}

/** Collects figures and notes for one benchmark run; `finish` prints the table and writes the JSON. */
export class Recorder {
  readonly name: string;
  readonly figures: Figure[] = [];
  readonly notes: string[] = [];
  readonly #started = new Date();

  constructor(name: string) {
    this.name = name;
  }

  /** Records figures and prints each as it comes, so a long run shows progress. */
  add(...figures: Figure[]): void {
    this.figures.push(...figures);
    for (const f of figures)
      console.log(
        `  ${f.bench}: ${f.name} = ${digits(f.summary.median)} ${f.unit}` +
          (f.summary.n > 1 ? ` (${digits(f.summary.min)}–${digits(f.summary.max)})` : ''),
      );
  }

  note(text: string): void {
    this.notes.push(text);
    console.log(`  · ${text}`);
  }

  report(command: string): BenchReport {
    return {
      name: this.name,
      command,
      startedAt: this.#started.toISOString(),
      seconds: Math.round((Date.now() - this.#started.getTime()) / 100) / 10,
      environment: environment(),
      figures: this.figures,
      notes: this.notes,
    };
  }
}

/** Prints the table (and markdown with --markdown), writes the JSON; for a benchmark run alone. */
export async function finish(report: BenchReport, opts: { markdown?: boolean } = {}): Promise<void> {
  console.log(
    `\n${report.name} — ${report.seconds} s, ${report.environment.cores} cores, ` +
      `load ${report.environment.loadAverage.join(' ')}\n`,
  );
  console.log(table(report.figures));
  if (opts.markdown) console.log(`\n${markdown(report.figures, report.command)}`);
  console.log(`\nresults: ${await writeResults(report)}`);
}
