/**
 * Test runs only (scripts/test.ts puts it in NODE_OPTIONS as `--import`): the project's TypeScript files with their
 * types stripped, cached on disk by content, so each of the run's ~250 processes (test files, the servers and CLIs
 * they start) does not strip every module again. Node strips with amaro (swc compiled to WebAssembly) on every load
 * and its compile cache keeps V8's code, not the stripped source: importing `src/main.ts` spent ~0.5 s of CPU in it,
 * a third of the import (`--cpu-prof`, 2026-11-30). Same transform as Node's (`stripTypeScriptTypes` in strip mode:
 * types become blanks, so every line and column, and every stack trace, stay where they were).
 *
 * Keyed by the source's SHA-1 under the Node version (its stripper); written to a temporary name and renamed, so
 * processes started side by side never read half a file. Files under node_modules are Node's (it refuses them).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Node 22.15+ (registerHooks; stripTypeScriptTypes since 22.13): on an older Node 22 the run strips as Node does.
const { registerHooks, stripTypeScriptTypes } = nodeModule;
const dir = path.join(import.meta.dirname, '../node_modules/.cache/ts-strip', process.version);
if (registerHooks && stripTypeScriptTypes && made(dir)) registerHooks({ load });

/** Whether the cache's directory is there (a read-only checkout: the run strips as Node does). */
function made(where) {
  try {
    mkdirSync(where, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

/** Node's stripper, without its one-time ExperimentalWarning (tests read some processes' stderr). */
function strip(source) {
  const emitWarning = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return stripTypeScriptTypes(source, { mode: 'strip' });
  } finally {
    process.emitWarning = emitWarning;
  }
}

function load(url, context, nextLoad) {
  const ours = url.startsWith('file:') && url.endsWith('.ts') && !url.includes('/node_modules/');
  if (!ours) return nextLoad(url, context);
  const source = readFileSync(fileURLToPath(url), 'utf8');
  const cached = path.join(dir, `${createHash('sha1').update(source).digest('hex')}.js`);
  let js;
  try {
    js = readFileSync(cached, 'utf8');
  } catch {
    js = strip(source);
    const partial = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    writeFileSync(partial, js);
    renameSync(partial, cached);
  }
  return { format: 'module', source: js, shortCircuit: true };
}
