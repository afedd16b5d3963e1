/**
 * The threshold sweep of bench/vote-rings.bench.ts (issue 45, item 3): per strategy it must name the point where
 * every job run finds ≥ 0.9 of the strategy's rings while naming the fewest honest accounts, and say so when no
 * point does. What bench/vote-rings.md's clause table rests on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sweepReport, type SweepRow } from '../../bench/vote-rings.bench.ts';

const run = (perTenK: number, cells: Record<string, [number, number]>) => ({
  recallAtLeast5: 0.9,
  perTenK,
  byStrategy: new Map(Object.entries(cells)),
});

const rowOf = (report: string, strategy: string) =>
  report
    .split('\n')
    .find((l) => l.startsWith(`| ${strategy} |`))!
    .split('|')
    .map((c) => c.trim());

test('per strategy: the least accusing point that reaches 0.9 in every run, or none', () => {
  const rows: SweepRow[] = [
    // The defaults: drip 0.5 in its worst run, rotating 0.8.
    { point: {}, runs: [run(0.3, { drip: [1, 2], rotating: [4, 5] }), run(0.2, { drip: [2, 2], rotating: [5, 5] })] },
    // Rotating reaches 0.9 in both runs here, at 1.8 per 10k (worst run).
    {
      point: { minScore: 0.5 },
      runs: [run(1.8, { drip: [1, 2], rotating: [9, 10] }), run(0.4, { drip: [1, 2], rotating: [5, 5] })],
    },
    // ... and here too at 0.9 per 10k: the one to name. Drip reaches 0.9 in one run only: not enough.
    {
      point: { minSuspicion: 1.5 },
      runs: [run(0.9, { drip: [2, 2], rotating: [10, 10] }), run(0.5, { drip: [1, 2], rotating: [9, 10] })],
    },
  ];
  const report = sweepReport(rows, 1, 'cmd');
  assert.deepEqual(rowOf(report, 'rotating').slice(1, 5), ['rotating', '0.80', 'minSuspicion 1.5', '0.90']);
  assert.deepEqual(rowOf(report, 'drip').slice(1, 5), ['drip', '0.50', 'no point of the sweep', '–']);
  // A strategy with no ring seen in a run does not count that run against it.
  const seenOnce: SweepRow[] = [{ point: {}, runs: [run(0.1, { lockstep: [5, 5] }), run(0.1, {})] }];
  assert.equal(rowOf(sweepReport(seenOnce, 1, 'cmd'), 'lockstep')[2], '1.00');
  // A strategy no run saw is not said to reach 0.9 anywhere.
  assert.deepEqual(rowOf(sweepReport(seenOnce, 1, 'cmd'), 'drip').slice(2, 5), ['–', 'no point of the sweep', '–']);
});
