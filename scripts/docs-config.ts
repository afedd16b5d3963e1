/**
 * Writes docs/configuration.md from the configuration schema (src/config.ts: every variable and its default) and the
 * descriptions beside it (src/config.docs.ts), into the page's template (scripts/configuration.template.md), so the
 * page cannot drift from what the server reads. `npm run docs:config` writes it; `npm run docs:config -- --check`
 * exits 1 when the committed page differs (test/unit/config-docs.test.ts checks the same).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configSchema } from '../src/config.ts';
import { OTHER_VARIABLE_DOCS, VARIABLE_DOCS, type VariableDoc } from '../src/config.docs.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CONFIGURATION_PAGE = `${ROOT}docs/configuration.md`;
const TEMPLATE = `${ROOT}scripts/configuration.template.md`;

/** The schema's default of a variable as text (`undefined`: none, the variable is optional). */
export function schemaDefault(name: string): string | undefined {
  const field = (configSchema.shape as Record<string, { _zod: { def: { type: string; defaultValue?: unknown } } }>)[
    name
  ];
  if (!field) throw new Error(`${name} is not in the schema of src/config.ts`);
  const def = field._zod.def;
  return def.type === 'default' || def.type === 'prefault' ? String(def.defaultValue) : undefined;
}

/** Why the descriptions cannot make a page: variables without one, entries for no variable, bad cells. */
export function descriptionProblems(): string[] {
  const problems: string[] = [];
  const names = Object.keys(configSchema.shape);
  for (const name of names) {
    const doc = VARIABLE_DOCS[name];
    if (!doc || !doc.meaning.trim()) problems.push(`${name} has no description in src/config.docs.ts`);
    else if (!doc.default && schemaDefault(name) === undefined) {
      problems.push(`${name} has no default in the schema: say in src/config.docs.ts what unset means (default)`);
    }
  }
  for (const name of Object.keys(VARIABLE_DOCS)) {
    if (!names.includes(name)) problems.push(`${name} is described in src/config.docs.ts but not in the schema`);
  }
  const all: Array<[string, VariableDoc]> = [...Object.entries(VARIABLE_DOCS), ...Object.entries(OTHER_VARIABLE_DOCS)];
  for (const [name, doc] of all) {
    for (const cell of [doc.default ?? '', doc.meaning]) {
      if (/[|\n]/.test(cell)) problems.push(`${name}: a description is one table cell (no | and no line break)`);
    }
  }
  return problems;
}

function defaultCell(name: string, doc: VariableDoc): string {
  if (doc.default) return doc.default;
  const value = schemaDefault(name);
  return value === '' ? 'empty' : `\`${value}\``;
}

/** The page, as the script writes it. Throws when a variable lacks a description. */
export function renderConfigurationPage(): string {
  const problems = descriptionProblems();
  if (problems.length) throw new Error(`cannot write docs/configuration.md:\n  ${problems.join('\n  ')}`);
  const variables = [
    '| variable | default | meaning |',
    '|---|---|---|',
    ...Object.entries(VARIABLE_DOCS).map(
      ([name, doc]) => `| \`${name}\` | ${defaultCell(name, doc)} | ${doc.meaning} |`,
    ),
  ].join('\n');
  const others = [
    '| variable | read by | default | meaning |',
    '|---|---|---|---|',
    ...Object.entries(OTHER_VARIABLE_DOCS).map(
      ([name, doc]) => `| \`${name}\` | ${doc.readBy} | ${doc.default ?? 'unset'} | ${doc.meaning} |`,
    ),
  ].join('\n');
  const template = readFileSync(TEMPLATE, 'utf8');
  if (!template.includes('<!-- variables -->') || !template.includes('<!-- other variables -->')) {
    throw new Error(`${TEMPLATE} lacks its <!-- variables --> or <!-- other variables --> marker`);
  }
  return template.replace('<!-- variables -->', () => variables).replace('<!-- other variables -->', () => others);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const page = renderConfigurationPage();
  if (process.argv.includes('--check')) {
    const committed = readFileSync(CONFIGURATION_PAGE, 'utf8');
    if (committed !== page) {
      console.error('docs/configuration.md is out of date: run npm run docs:config');
      process.exit(1);
    }
    console.log('docs/configuration.md is up to date');
  } else {
    writeFileSync(CONFIGURATION_PAGE, page);
    console.log(`wrote docs/configuration.md (${Object.keys(VARIABLE_DOCS).length} variables)`);
  }
}
