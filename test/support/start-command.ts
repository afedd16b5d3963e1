/**
 * The one start command: the node argv of package.json's `start` script (after its `exec`), which the
 * Dockerfile's CMD repeats and the tests run. Also a small Dockerfile reader for the tests that compare them.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export function packageJson(): {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
} {
  return JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8'));
}

/** `node --experimental-strip-types … src/main.ts` as an argv, from `… && MALLOC_ARENA_MAX=… exec node …`. */
export function startArgv(): string[] {
  const start = packageJson().scripts.start!;
  const m = /(?:^|&&\s*)(?:[A-Z_]+=\S+\s+)*exec\s+(node\s[^;&|]+)$/.exec(start);
  if (!m) throw new Error(`package.json start script does not end in \`exec node …\`: ${start}`);
  return m[1]!.trim().split(/\s+/);
}

/** The default the start script gives MALLOC_ARENA_MAX (`${MALLOC_ARENA_MAX:-2}`). */
export function startMallocArenaMax(): string | null {
  return /MALLOC_ARENA_MAX=\$\{MALLOC_ARENA_MAX:-(\d+)\}/.exec(packageJson().scripts.start!)?.[1] ?? null;
}

export interface Instruction {
  keyword: string;
  args: string;
  /** Index of the build stage (each FROM starts one). */
  stage: number;
}

/** Dockerfile instructions, continuation lines joined, comments dropped. */
export function dockerfile(path = `${ROOT}/Dockerfile`): Instruction[] {
  const logical = readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  let stage = -1;
  return logical.map((line) => {
    const [, keyword, args] = /^(\w+)\s*(.*)$/.exec(line)!;
    if (keyword!.toUpperCase() === 'FROM') stage++;
    return { keyword: keyword!.toUpperCase(), args: args!.trim(), stage };
  });
}

/** An exec-form (JSON array) argument, or null for the shell form. */
export function execForm(args: string): string[] | null {
  if (!args.startsWith('[')) return null;
  const parsed: unknown = JSON.parse(args);
  return Array.isArray(parsed) && parsed.every((a) => typeof a === 'string') ? parsed : null;
}

/** `ENV A=1 B=2` of the stage, as a record. */
export function envOf(instructions: Instruction[], stage: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of instructions.filter((x) => x.keyword === 'ENV' && x.stage === stage)) {
    for (const m of i.args.matchAll(/([A-Z_][A-Z0-9_]*)=("[^"]*"|\S+)/g)) env[m[1]!] = m[2]!.replace(/^"|"$/g, '');
  }
  return env;
}
