/**
 * Prints a saved result as README-ready markdown tables, under the command that produced it:
 *   node bench/to-markdown.ts bench/results/all-<timestamp>.json
 */
import { readFile } from 'node:fs/promises';
import { parseCommandLine } from './support/cli.ts';
import { markdown, type BenchReport } from './support/report.ts';

const command = 'node bench/to-markdown.ts';
const [file, ...extra] = parseCommandLine(
  command,
  {},
  { positionals: 'bench/results/<name>-<timestamp>.json' },
).positionals;
if (!file || extra.length) {
  console.error(`${command}: expected one result file (see ${command} --help)`);
  process.exit(2);
}
const report = JSON.parse(await readFile(file, 'utf8')) as BenchReport;
console.log(
  `${report.environment.cores} cores (${report.environment.cpu}), Node ${report.environment.node}, ` +
    `sharp ${report.environment.sharp} / libvips ${report.environment.libvips}, ${report.startedAt.slice(0, 10)}\n`,
);
console.log(markdown(report.figures, report.command));
if (report.notes.length) console.log(report.notes.map((n) => `- ${n}`).join('\n'));
