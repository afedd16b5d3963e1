/**
 * `npm run bench:lighthouse`: Lighthouse (npm `lighthouse`, run programmatically) on every page of the web front
 * end, in Debian's Chromium, mobile (Lighthouse's default: a 412 px phone, simulated slow 4G and 4× CPU) and
 * desktop presets, categories performance, accessibility, best practices and SEO (issue 30: 100 in each).
 *
 * The app runs as `npm start` runs it, on a temporary SQLite data directory seeded through the API
 * (bench/support/web-seed.ts: users, generated images, a link, tags, votes, a hold and a removal). Pages are
 * audited as a signed-out visitor (a search engine, a link's first reader). Runs are noisy on a shared machine:
 * `--runs N` audits each page N times and reports the median of each score and of the LCP.
 *
 *   npm run bench:lighthouse [-- --runs 3 --json lighthouse.json --only signin,feed --presets desktop]
 *
 * Prints a markdown table (page × preset: the four scores, LCP, and Lighthouse's CPU benchmark index of the
 * run, its measure of how much CPU Chromium got: ~1000 or more on an idle desktop; the simulated 4× slowdown
 * multiplies what the page's main thread really took, so a starved run scores lower) and, under it, every audit
 * that kept a score under 100, by page and preset.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as chromeLauncher from 'chrome-launcher';
import lighthouse, { desktopConfig, type Config, type Flags, type Result } from 'lighthouse';
import { parseCommandLine } from './support/cli.ts';
import { startSeededApp } from './support/web-seed.ts';

const command = 'npm run bench:lighthouse --';
const { values } = parseCommandLine(
  command,
  {
    runs: { type: 'string', default: '1' },
    json: { type: 'string' },
    only: { type: 'string' },
    presets: { type: 'string', default: 'mobile,desktop' },
    reports: { type: 'string' },
  },
  {
    help: {
      summary:
        'Lighthouse on every page of the web front end (mobile and desktop presets; performance, accessibility, ' +
        'best practices, SEO) against the app seeded with generated data, in /usr/bin/chromium. Prints a markdown ' +
        'table of the median scores and LCP, then each audit that kept a score under 100.',
      options: {
        runs: 'audits of each page and preset; the table shows their medians',
        json: 'also write every run and the medians to this file',
        only: 'audit only these pages (names from the table, comma-separated)',
        presets: 'mobile, desktop or both',
        reports: "write each run's full Lighthouse report (JSON, for its viewer) into this folder",
      },
    },
  },
);
const runs = Math.max(1, Number(values.runs));
const presets = String(values.presets)
  .split(',')
  .map((p) => p.trim())
  .filter((p): p is 'mobile' | 'desktop' => p === 'mobile' || p === 'desktop');
const only = values.only ? new Set(String(values.only).split(',')) : null;
const CATEGORIES = ['performance', 'accessibility', 'best-practices', 'seo'] as const;

interface Audit {
  page: string;
  preset: string;
  scores: Record<string, number>;
  lcpMs: number;
  /** Lighthouse's measure of the CPU Chromium got during the run (`environment.benchmarkIndex`). */
  cpuIndex: number;
  /** Audits with a score under 1 (binary or numeric ones that count), as `id (score)`. */
  below: string[];
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

const countBy = (xs: string[]) => {
  const counts = new Map<string, number>();
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
  return counts;
};

/** The audits of the four categories that kept a score under 1. */
function belowFull(lhr: Result): string[] {
  const out: string[] = [];
  for (const id of CATEGORIES) {
    for (const ref of lhr.categories[id]?.auditRefs ?? []) {
      const a = lhr.audits[ref.id];
      if (!a || a.score === null || a.score >= 1 || ref.weight === 0) continue;
      if (a.scoreDisplayMode === 'informative' || a.scoreDisplayMode === 'manual') continue;
      const shown = a.displayValue ? `, ${a.displayValue}` : '';
      out.push(`${id}/${ref.id} (${a.score.toFixed(2)}${shown})`);
    }
  }
  return out;
}

const app = await startSeededApp();
let chrome: chromeLauncher.LaunchedChrome | undefined;
try {
  const origin = app.server.url;
  const pages: Array<[string, string]> = [
    ['feed', '/'],
    ['feed, top', '/?sort=top'],
    ['feed, tag', `/?tag=${app.tagSlug}`],
    ['upload, image', `/uploads/${app.imageId}`],
    ['upload, link', `/uploads/${app.linkId}`],
    ['user', `/u/${app.username}`],
    ['modlog', '/modlog'],
    ['signin', '/signin'],
    ['signup', '/signup'],
    ['new', '/new'],
  ];
  const todo: Array<[string, string]> = [];
  for (const [name, path] of pages) {
    if (only && !only.has(name)) continue;
    const r = await fetch(origin + path, { headers: { accept: 'text/html' } });
    await r.arrayBuffer();
    if (r.status !== 200) console.log(`${name} (${path}) skipped: ${r.status}`);
    else todo.push([name, path]);
  }

  chrome = await chromeLauncher.launch({
    chromePath: '/usr/bin/chromium',
    chromeFlags: ['--headless=new', '--no-sandbox'],
  });
  const all: Audit[] = [];
  for (let run = 1; run <= runs; run++) {
    for (const [name, path] of todo) {
      for (const preset of presets) {
        const flags: Flags = {
          port: chrome.port,
          output: 'json',
          logLevel: 'error',
          onlyCategories: [...CATEGORIES],
        };
        const config: Config | undefined = preset === 'desktop' ? desktopConfig : undefined;
        // A run that failed to record (e.g. NO_NAVSTART on a starved machine) is run again, as its message asks.
        let lhr: Result | undefined;
        for (let attempt = 1; !lhr; attempt++) {
          const result = await lighthouse(origin + path, flags, config);
          const error = result ? result.lhr.runtimeError : { message: 'no result' };
          if (!error) lhr = result!.lhr;
          else if (attempt === 3) throw new Error(`${path} (${preset}): ${error.message}`);
          else console.error(`${path} (${preset}): ${error.message}; again`);
        }
        const scores = Object.fromEntries(
          CATEGORIES.map((c) => [c, Math.round((lhr.categories[c]?.score ?? 0) * 100)] as const),
        );
        const lcpMs = lhr.audits['largest-contentful-paint']?.numericValue ?? NaN;
        if (values.reports) {
          const file = `${name.replace(/\W+/g, '-')}.${preset}.${run}.json`;
          await mkdir(String(values.reports), { recursive: true });
          await writeFile(join(String(values.reports), file), JSON.stringify(lhr));
        }
        const cpuIndex = lhr.environment.benchmarkIndex;
        all.push({ page: name, preset, scores, lcpMs, cpuIndex, below: belowFull(lhr) });
        console.error(
          `run ${run}/${runs} ${name.padEnd(14)} ${preset.padEnd(7)} ` +
            `${CATEGORIES.map((c) => scores[c]).join(' / ')}  LCP ${Math.round(lcpMs)} ms  CPU index ${cpuIndex}`,
        );
      }
    }
  }

  const rows: Audit[] = [];
  for (const [name] of todo) {
    for (const preset of presets) {
      const mine = all.filter((a) => a.page === name && a.preset === preset);
      rows.push({
        page: name,
        preset,
        scores: Object.fromEntries(CATEGORIES.map((c) => [c, median(mine.map((a) => a.scores[c]!))])),
        lcpMs: median(mine.map((a) => a.lcpMs)),
        cpuIndex: median(mine.map((a) => a.cpuIndex)),
        // Each audit once, with how many of the runs it was under 1 in (each run's figures are in --json).
        below: [...countBy(mine.flatMap((a) => a.below.map((x) => x.split(' ')[0]!)))].map(
          ([id, n]) => `${id} (${n} of ${mine.length})`,
        ),
      });
    }
  }
  const pathOf = new Map(todo);
  const lines = [
    `Lighthouse ${(await import('lighthouse/package.json', { with: { type: 'json' } })).default.version}, ` +
      `${runs === 1 ? 'one run' : `median of ${runs} runs`} per page and preset (\`${command} --runs ${runs}\`)`,
    '',
    '| page | path | preset | performance | accessibility | best practices | SEO | LCP | CPU index |',
    '|---|---|---|--:|--:|--:|--:|--:|--:|',
    ...rows.map(
      (r) =>
        `| ${r.page} | \`${pathOf.get(r.page)!.replace(/[0-9a-f-]{36}$/, '{id}')}\` | ${r.preset} | ` +
        `${CATEGORIES.map((c) => r.scores[c]).join(' | ')} | ${(r.lcpMs / 1000).toFixed(1)} s | ` +
        `${Math.round(r.cpuIndex)} |`,
    ),
  ];
  const under = rows.filter((r) => r.below.length);
  if (under.length) {
    lines.push('', 'Under 100 in some run:');
    for (const r of under) lines.push(`- ${r.page}, ${r.preset}: ${r.below.join('; ')}`);
  }
  console.log(lines.join('\n'));
  if (values.json) await writeFile(String(values.json), JSON.stringify({ runs: all, medians: rows }, null, 2));
} finally {
  chrome?.kill();
  await app.stop();
}
