/**
 * Prints a saved result as README-ready markdown tables, under the command that produced it:
 *   node bench/to-markdown.ts bench/results/all-<timestamp>.json
 */
import { readFile } from 'node:fs/promises';
import { markdown, type BenchReport } from './support/report.ts';

const file = process.argv[2];
if (!file) {
  console.error('usage: node bench/to-markdown.ts bench/results/<name>-<timestamp>.json');
  process.exit(2);
}
const report = JSON.parse(await readFile(file, 'utf8')) as BenchReport;
console.log(`${report.environment.cores} cores (${report.environment.cpu}), Node ${report.environment.node}, sharp ${report.environment.sharp} / libvips ${report.environment.libvips}, ${report.startedAt.slice(0, 10)}\n`);
console.log(markdown(report.figures, report.command));
if (report.notes.length) console.log(report.notes.map((n) => `- ${n}`).join('\n'));
