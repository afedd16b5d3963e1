/** Running one benchmark file alone: `node bench/<name>.bench.ts [--options]`. */
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { finish, Recorder } from './report.ts';

export const isMain = (moduleUrl: string): boolean => process.argv[1] === fileURLToPath(moduleUrl);

export const numbers = (list: string): number[] =>
  list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const n = Number(s.replace(/k$/i, '000').replace(/m$/i, '000000'));
      if (!Number.isFinite(n)) throw new Error(`Expected a comma-separated list of numbers but received "${list}"`);
      return n;
    });

type Options = NonNullable<ParseArgsConfig['options']>;

/** `--name VALUE (default d)` for each option: the usage line of a script that declares only its options. */
export function usageOf(command: string, options: Options, positionals = ''): string {
  const flags = Object.entries(options).map(([name, o]) => {
    const value = o.type === 'string' ? ` ${name.toUpperCase().replace(/-/g, '_')}` : '';
    return `[--${name}${value}${o.default !== undefined ? ` (default ${String(o.default)})` : ''}]`;
  });
  return `usage: ${command}${positionals ? ` ${positionals}` : ''} ${[...flags, '[--help]'].join(' ')}`;
}

/** What `--help` says beyond the usage line: what the command does, and each option's meaning. */
export interface Help {
  /** What the command does and prints: paragraphs (blank-line separated), reflowed to 110 columns. */
  summary: string;
  /** Each option's meaning, by name; its default is added from the option itself unless it says `(default …)`. */
  options: Record<string, string>;
  /** Paragraphs after the options: examples, exit statuses. */
  footer?: string;
}

/**
 * The usage line, then the summary and one entry per option (`--name VALUE  meaning (default d)`), as the pixvote
 * commands print their help.
 */
export function helpOf(command: string, options: Options, help: Help, positionals = ''): string {
  const all: Options = { ...options, help: { type: 'boolean', short: 'h' } };
  const meanings: Record<string, string> = { ...help.options, help: 'this help' };
  const flag = (name: string) => {
    const o = all[name]!;
    const value = o.type === 'string' ? ` ${name.toUpperCase().replace(/-/g, '_')}` : '';
    return `${o.short ? `-${o.short}, ` : ''}--${name}${value}`;
  };
  const width = Math.max(...Object.keys(all).map((n) => flag(n).length)) + 2;
  const entries = Object.entries(all).map(([name, o]) => {
    const meaning = meanings[name];
    if (!meaning) throw new Error(`${command}: no help for --${name}`);
    const dflt =
      o.default !== undefined && o.type === 'string' && !meaning.includes('(default')
        ? ` (default ${String(o.default)})`
        : '';
    return `  ${flag(name).padEnd(width)}${meaning}${dflt}`;
  });
  // Paragraphs (split on blank lines) reflowed to 110 columns, indented by two.
  const indent = (text: string) =>
    text
      .trim()
      .split(/\n\s*\n/)
      .map((paragraph) => {
        const lines: string[] = [];
        // Words: whitespace outside backticks splits them (a `quoted command` stays on one line).
        for (const word of paragraph.trim().split(/\s+(?=(?:[^`]*`[^`]*`)*[^`]*$)/)) {
          const last = lines.length - 1;
          if (last >= 0 && lines[last]!.length + 1 + word.length <= 108) lines[last] += ` ${word}`;
          else lines.push(word);
        }
        return lines.map((l) => `  ${l}`).join('\n');
      })
      .join('\n\n');
  return [
    usageOf(command, options, positionals),
    '',
    indent(help.summary),
    '',
    ...entries,
    ...(help.footer ? ['', indent(help.footer)] : []),
  ].join('\n');
}

/**
 * parseArgs for a script: `--help`/`-h` prints the usage and exits 0; an unknown or malformed flag prints one
 * line naming it and exits 2 (instead of parseArgs' stack trace).
 */
export function parseCommandLine<O extends Options>(
  command: string,
  options: O,
  opts: { positionals?: string; args?: string[]; help?: Help } = {},
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const usage = opts.help
    ? helpOf(command, options, opts.help, opts.positionals)
    : usageOf(command, options, opts.positionals);
  try {
    const r = parseArgs({
      args: opts.args ?? process.argv.slice(2),
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: Boolean(opts.positionals),
    });
    if ((r.values as { help?: boolean }).help) {
      console.log(usage);
      process.exit(0);
    }
    return r;
  } catch (e) {
    if (!(e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw e;
    console.error(`${command.replace(/ --$/, '')}: ${(e as Error).message.split('. ')[0]} (see ${command} --help)`);
    process.exit(2);
  }
}

/** Options that parse but cannot be run (a size too small for a read it measures): exit 2 before any work. */
export class UsageError extends Error {}

/**
 * Parses the command line, runs the benchmark into a fresh Recorder, prints its table and writes its JSON.
 * Exits 1 with the message when it throws.
 */
export async function runAlone<O extends Options>(
  name: string,
  options: O,
  bench: (rec: Recorder, values: Record<string, string | boolean | undefined>) => Promise<void>,
  script = `bench:${name}`,
  help?: Help,
): Promise<void> {
  const command = `npm run ${script} --`;
  const { values } = parseCommandLine(
    command,
    { ...options, markdown: { type: 'boolean' } },
    help
      ? { help: { ...help, options: { markdown: 'also print the results as a Markdown table', ...help.options } } }
      : {},
  );
  const rec = new Recorder(name);
  try {
    await bench(rec, values);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`${command.replace(/ --$/, '')}: ${e.message} (see ${command} --help)`);
      process.exit(2);
    }
    console.error(`\n${name} failed: ${(e as Error).stack ?? String(e)}`);
    process.exit(1);
  }
  const ran = `npm run ${script}${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  await finish(rec.report(ran), { markdown: Boolean(values.markdown) });
  // Worker pools and database pools are closed by each benchmark; this only ends stray keep-alive timers.
  process.exit(0);
}
