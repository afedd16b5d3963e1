#!/usr/bin/env node
// The `pixvote` command. Plain JavaScript on purpose: the CLI is TypeScript run by Node's type stripping,
// which is on by default from Node 22.18 but needs --experimental-strip-types on 22.17; this launcher
// re-runs itself with the flag when needed. Node never strips types under node_modules, so an installed
// copy (not `npm link`, which resolves to the checkout) runs the compiled dist/ from `npm run build`.
import { spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Runs this launcher again under `node` with `flags`, as this process's stand-in: its exit status and signals are
 * this process's.
 */
function relaunch(node, flags) {
  const child = spawn(node, [...flags, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  // Ctrl-C reaches the child from the terminal itself (same process group): forwarding it too would be a second
  // Ctrl-C, which stops the child at once, without its summary. SIGTERM and SIGHUP are sent to this process alone.
  process.on('SIGINT', () => {});
  for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (!signal) process.exit(code ?? 1);
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  });
}

const [major, minor] = process.versions.node.split('.').map(Number);
const tooOld = major < 22 || (major === 22 && minor < 17);
// Run outside `npm exec` (`npm link`, `./bin/pixvote.js`, `node bin/pixvote.js admin …` on a server), the `node`
// first on PATH is the machine's own: the checkout's Node 22 (node_modules/.bin/node, which `npm install` brings on
// Linux x64) runs the command instead, as it runs `npx pixvote` and every npm script. Nothing installed globally.
const ownNode = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url));
const source = new URL('../src/cli/pixvote.cli.ts', import.meta.url);
const compiled = new URL('../dist/cli/pixvote.cli.js', import.meta.url);
const underNodeModules = fileURLToPath(source).split(/[\\/]/).includes('node_modules');

if (tooOld && existsSync(ownNode) && realpathSync(ownNode) !== realpathSync(process.execPath)) {
  relaunch(ownNode, []);
} else if (tooOld) {
  console.error(
    `pixvote needs Node.js >= 22.17 (found ${process.version}); run \`npm install\` in ` +
      `${fileURLToPath(new URL('..', import.meta.url))} first: on Linux x64 it brings Node 22, which \`npx pixvote\` ` +
      'there, a `pixvote` put on PATH by `npm link` and `node bin/pixvote.js` then run under (elsewhere, put a ' +
      'Node.js >= 22.17 first on PATH).',
  );
  process.exit(1);
} else if (underNodeModules || process.features.typescript) {
  const entry = underNodeModules ? compiled : source;
  if (!existsSync(entry)) {
    console.error(
      `pixvote: ${fileURLToPath(entry)} is missing; ` +
        `run \`npm run build\` in ${fileURLToPath(new URL('..', import.meta.url))}`,
    );
    process.exit(2);
  }
  const { main } = await import(entry.href);
  process.exitCode = await main(process.argv.slice(2));
} else {
  relaunch(process.execPath, ['--experimental-strip-types', '--disable-warning=ExperimentalWarning']);
}
