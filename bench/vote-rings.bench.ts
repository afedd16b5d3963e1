/**
 * `npm run bench:vote-rings`: the vote-ring detector (src/domain/votes/vote-rings.ts) on a generated population
 * (bench/support/vote-population.ts): 100k honest voters and planted rings of 3–50 accounts in six strategies.
 * Reports recall per ring size × strategy, false accusations per 10k honest accounts, and the detector's time per
 * 1M votes beside a yardstick measured in the same rounds (sorting and grouping the same votes by upload), whose
 * ratio is what a busy machine does not move. Thresholds are the detector's defaults, tuned on seed 1 only (the
 * tuning population, `--seed 1`); the report is on seed 2, never tuned on. `--markdown FILE` writes the report.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { DEFAULT_RING_POLICY, detectVoteRings, type RingPolicy } from '../src/domain/votes/vote-rings.ts';
import { isMain } from './support/cli.ts';
import { figure, type Recorder } from './support/report.ts';
import { TARGETS } from './support/targets.ts';
import { median } from './support/stats.ts';
import { generatePopulation, STRATEGIES, type Population } from './support/vote-population.ts';

export interface VoteRingResult {
  votes: number;
  honest: number;
  recall: Map<string, number>;
  /** Rings of ≥ 5 accounts found, of all planted. */
  recallAtLeast5: number;
  falsePerTenK: number;
  falseAccused: number;
  reported: number;
  detectorMsPer1M: number;
  yardstickMsPer1M: number;
  /** Detector time ÷ yardstick time (median of the rounds). */
  ratio: number;
  /** The same, per round. */
  ratios: number[];
}

/** A ring counts as found when one reported group holds at least half of its accounts. */
export function evaluate(pop: Population, policy: RingPolicy = DEFAULT_RING_POLICY, rounds = 3): VoteRingResult {
  const created = (u: string) => {
    const c = pop.created.get(u);
    return c === undefined
      ? undefined
      : { createdAt: c, signupNet: null, signupUa: null, uploads: 0, reports: 0, votes: 0 };
  };
  const detTimes: number[] = [];
  const yardTimes: number[] = [];
  let found = detectVoteRings(pop.votes, created, policy);
  for (let r = 0; r < rounds; r++) {
    let t = performance.now();
    found = detectVoteRings(pop.votes, created, policy);
    detTimes.push(performance.now() - t);
    t = performance.now();
    yardstick(pop);
    yardTimes.push(performance.now() - t);
  }
  const groupOf = new Map<string, number>();
  found.forEach((g, i) => g.accounts.forEach((a) => groupOf.set(a, i)));
  const recall = new Map<string, number>();
  const hits = new Map<string, number[]>();
  let big = 0;
  let bigFound = 0;
  for (const ring of pop.rings) {
    const counts = new Map<number, number>();
    for (const a of ring.accounts) {
      const g = groupOf.get(a);
      if (g !== undefined) counts.set(g, (counts.get(g) ?? 0) + 1);
    }
    const hit = [...counts.values()].some((c) => c * 2 >= ring.accounts.length) ? 1 : 0;
    const key = `${ring.strategy}|${ring.size}`;
    hits.set(key, [...(hits.get(key) ?? []), hit]);
    if (ring.size >= 5) {
      big++;
      bigFound += hit;
    }
  }
  for (const [k, h] of hits) recall.set(k, h.reduce((a, b) => a + b, 0) / h.length);
  let falseAccused = 0;
  for (const a of groupOf.keys()) if (a.startsWith('h')) falseAccused++;
  const per1M = 1e6 / pop.votes.length;
  const detectorMs = median(detTimes);
  const yardMs = median(yardTimes);
  return {
    votes: pop.votes.length,
    honest: pop.honest,
    recall,
    recallAtLeast5: bigFound / big,
    falsePerTenK: (falseAccused / pop.honest) * 10_000,
    falseAccused,
    reported: found.length,
    detectorMsPer1M: detectorMs * per1M,
    yardstickMsPer1M: yardMs * per1M,
    ratio: median(detTimes.map((d, i) => d / yardTimes[i]!)),
    ratios: detTimes.map((d, i) => d / yardTimes[i]!),
  };
}

/** The yardstick: what any detector must at least do — sort the votes by (upload, user) and count each group. */
function yardstick(pop: Population): number {
  const keys = pop.votes.map((v) => `${v.uploadId}\u0000${v.userId}`);
  keys.sort();
  let groups = 0;
  let last = '';
  for (const k of keys) {
    const upload = k.slice(0, k.indexOf('\u0000'));
    if (upload !== last) groups++;
    last = upload;
  }
  return groups;
}

/** The figures bench:ci guards: seed 2, the full population (about 12 s). */
export function voteRingsBench(rec: Recorder, opts: { seed?: number; rounds?: number } = {}): VoteRingResult {
  const seed = opts.seed ?? 2;
  const pop = generatePopulation({ seed });
  const r = evaluate(pop, DEFAULT_RING_POLICY, opts.rounds ?? 3);
  rec.add(
    figure('vote-rings', `recall, rings of ≥ 5 accounts (seed ${seed})`, '', r.recallAtLeast5, {
      target: TARGETS.voteRingRecall,
    }),
    figure('vote-rings', 'false accusations per 10k honest accounts', '', r.falsePerTenK, {
      target: TARGETS.voteRingFalsePer10k,
    }),
    figure('vote-rings', 'detector ÷ sort and group the same votes', '×', r.ratios, {
      target: TARGETS.voteRingVsSort,
    }),
  );
  return r;
}

export function report(result: VoteRingResult, seed: number, command: string, sizes: number[]): string {
  const rows = STRATEGIES.map(
    (s) => `| ${s} | ${sizes.map((n) => fmt(result.recall.get(`${s}|${n}`) ?? NaN)).join(' | ')} |`,
  );
  return [
    `Population seed ${seed}: ${result.honest.toLocaleString('en')} honest voters, ` +
      `${result.votes.toLocaleString('en')} votes, ${result.reported} groups reported.`,
    '',
    `| recall | ${sizes.map((n) => `${n} accounts`).join(' | ')} |`,
    `|---|${sizes.map(() => '---').join('|')}|`,
    ...rows,
    '',
    `- recall, rings of ≥ 5 accounts: **${fmt(result.recallAtLeast5)}** (goal ≥ 0.9)`,
    `- false accusations: **${result.falsePerTenK.toFixed(2)} per 10k honest accounts** ` +
      `(${result.falseAccused} of ${result.honest.toLocaleString('en')}; goal ≤ 1)`,
    `- detector: ${result.detectorMsPer1M.toFixed(0)} ms per 1M votes; yardstick (sort + group the same votes ` +
      `by upload): ${result.yardstickMsPer1M.toFixed(0)} ms per 1M; **ratio ${result.ratio.toFixed(2)}**`,
    '',
    `    ${command}`,
  ].join('\n');
}

const fmt = (x: number) => (Number.isNaN(x) ? '–' : x.toFixed(2));

if (isMain(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string', default: '2' },
      honest: { type: 'string', default: '100000' },
      'per-cell': { type: 'string', default: '10' },
      rounds: { type: 'string', default: '3' },
      markdown: { type: 'string' },
    },
  });
  const seed = Number(values.seed);
  const sizes = [3, 5, 10, 20, 50];
  const t = performance.now();
  const pop = generatePopulation({ seed, honest: Number(values.honest), perCell: Number(values['per-cell']), sizes });
  console.error(`generated ${pop.votes.length} votes in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const result = evaluate(pop, DEFAULT_RING_POLICY, Number(values.rounds));
  const command = `npm run bench:vote-rings -- ${process.argv.slice(2).join(' ')}`.trim();
  const text = report(result, seed, command, sizes);
  console.log(text);
  if (values.markdown) await writeFile(values.markdown, `${text}\n`);
}
