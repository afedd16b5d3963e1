/**
 * docs/configuration.md is generated from the schema of src/config.ts and the descriptions of src/config.docs.ts
 * (scripts/docs-config.ts, `npm run docs:config`): the committed page is what the script writes, every variable the
 * schema has is described, and every variable the configuration reads (observed, not copied) is on the page.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { configSchema, loadConfig } from '../../src/config.ts';
import { OTHER_VARIABLE_DOCS, VARIABLE_DOCS } from '../../src/config.docs.ts';
import {
  CONFIGURATION_PAGE,
  descriptionProblems,
  renderConfigurationPage,
  schemaDefault,
} from '../../scripts/docs-config.ts';

/** The variables loadConfig() reads, with object storage on so its AWS_* reads happen too. */
function variablesConfigReads(): Set<string> {
  const read = new Set<string>();
  const env = new Proxy<NodeJS.ProcessEnv>(
    { JWT_SECRET: 'x'.repeat(48), MEDIA_STORE: 's3://bucket/prefix' },
    {
      get(target, key) {
        if (typeof key === 'string') read.add(key);
        return target[key as string];
      },
    },
  );
  loadConfig(env);
  return read;
}

test('docs/configuration.md is what `npm run docs:config` writes', () => {
  const committed = readFileSync(CONFIGURATION_PAGE, 'utf8');
  assert.ok(committed === renderConfigurationPage(), 'docs/configuration.md is out of date: run npm run docs:config');
});

test('every variable of the schema has a description, and every description a variable', () => {
  assert.deepEqual(descriptionProblems(), []);
  assert.deepEqual(Object.keys(VARIABLE_DOCS).sort(), Object.keys(configSchema.shape).sort());
});

test('the page states each schema default, and names every variable the configuration reads', () => {
  const page = renderConfigurationPage();
  for (const name of Object.keys(configSchema.shape)) {
    const row = page.split('\n').find((l) => l.startsWith(`| \`${name}\` |`));
    assert.ok(row, `${name} has a row`);
    const value = schemaDefault(name);
    if (value !== undefined) {
      const cell = row.split(' | ')[1]!;
      assert.ok(
        cell.includes(value === '' ? 'empty' : `\`${value}\``),
        `${name}: the default cell "${cell}" names ${value}`,
      );
    }
  }
  const read = variablesConfigReads();
  assert.ok(read.size >= 40, `loadConfig read ${read.size} variables`);
  for (const name of read) {
    assert.ok(
      name in VARIABLE_DOCS || name in OTHER_VARIABLE_DOCS,
      `${name} (read by src/config.ts) is not on the page`,
    );
  }
});

test('a variable without a description stops the script, naming it', () => {
  const docs = VARIABLE_DOCS as Record<string, unknown>;
  const saved = docs.PORT;
  delete docs.PORT;
  try {
    assert.match(descriptionProblems().join('\n'), /PORT has no description/);
    assert.throws(() => renderConfigurationPage(), /PORT has no description/);
  } finally {
    docs.PORT = saved;
  }
});
