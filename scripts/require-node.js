// Plain JavaScript on purpose: it must run (and explain itself) on Node versions that cannot run the TypeScript sources.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 17)) {
  console.error(`pixvote needs Node.js >= 22.17 (found ${process.version}); install it, e.g. \`npm install -g --prefix /usr/local node@22\`, and run again.`);
  process.exit(1);
}
