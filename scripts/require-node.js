// Plain JavaScript on purpose: it must run (and explain itself) on Node versions that cannot
// run the TypeScript sources.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 17)) {
  // npm scripts run node_modules/.bin/node first, which `npm install` provides (the `node` package): reaching
  // this line means the install did not happen or was made with --omit of that dependency.
  console.error(
    `pixvote needs Node.js >= 22.17 (found ${process.version}); ` +
      'run `npm install` first: it brings Node 22 into node_modules/.bin, which npm scripts use.',
  );
  process.exit(1);
}
