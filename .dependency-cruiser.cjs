/**
 * The layers of pixvote, as rules `npm run lint:layers` (the first step of `npm test`) checks on every import
 * under src/, type-only imports included (README, "Architecture"):
 *
 *   gateway (HTTP)  ──▶  domain (services, ports, rules)  ◀──  store (database, files, Redis), workers, net
 *
 * The domain declares what it needs (its ports: domain/uploads/ports.ts, domain/rate-limit.ts, the *Store
 * interfaces of its services) and imports nothing outward; src/store, src/workers and src/net implement those
 * ports; the gateway reaches them only through the ports. The composition roots — src/main.ts (with
 * src/server.ts, src/cluster.ts, src/open-database.ts) and the admin commands of src/cli — wire the
 * implementations to the services and may import anything. Modules beside the layers (src/config.ts,
 * src/logger.ts, src/metrics.ts) are shared, but the domain does not use them either.
 *
 * TypeScript 7 has no compiler API that dependency-cruiser can use yet, so sources are parsed with swc
 * (`parser: 'swc'`), which reports type-only imports as dependencies too.
 */
const LAYER = (name) => `^src/${name}/`;
const COMPOSITION_ROOT = '^src/(main|server|cluster|open-database)[.]ts$';
const ADAPTERS = '^src/(store|workers|net)/';
/** Database, Redis, image and model packages, and the worker pool. */
const STORAGE_PACKAGES = [
  '@mikro-orm/[^/]+',
  'kysely',
  'pg',
  'sqlite-vec',
  'ioredis',
  'sharp',
  '@tensorflow/[^/]+',
  'onnxruntime-[^/]+',
  'piscina',
];

/** npm packages the domain may use: pure libraries that do no I/O of their own. */
const DOMAIN_PACKAGES = ['jsonwebtoken'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycle anywhere (a cycle makes load order matter and layers meaningless).',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'domain-imports-nothing-outward',
      comment:
        'The domain declares the types it needs (ports) and imports only the domain: not the gateway, store, ' +
        'workers, net, cli, the composition root, nor config/logger/metrics.',
      severity: 'error',
      from: { path: LAYER('domain') },
      to: { path: '^src/', pathNot: LAYER('domain') },
    },
    {
      name: 'domain-uses-no-infrastructure-package',
      comment:
        'The domain uses Node built-ins and the pure libraries of DOMAIN_PACKAGES; no HTTP framework, ORM, query ' +
        'builder, database or Redis driver, image or model library (koa, mikro-orm, kysely, pg, ioredis, sharp, ' +
        'tensorflow, …): those belong to the layers that implement its ports.',
      severity: 'error',
      from: { path: LAYER('domain') },
      to: {
        dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-bundled', 'npm-no-pkg', 'npm-unknown'],
        pathNot: `^node_modules/(${DOMAIN_PACKAGES.join('|')})/`,
      },
    },
    {
      name: 'gateway-only-through-domain',
      comment:
        'The gateway reaches storage, workers and outbound fetching only through domain ports (e.g. MediaFiles, ' +
        'Limiter), never their implementations; and it does not import the composition root that builds it.',
      severity: 'error',
      from: { path: LAYER('gateway') },
      to: { path: [LAYER('store'), LAYER('workers'), LAYER('net'), LAYER('cli'), COMPOSITION_ROOT] },
    },
    {
      name: 'gateway-uses-no-storage-package',
      comment: "Database, Redis and image libraries are the adapters' business, not the HTTP layer's.",
      severity: 'error',
      from: { path: LAYER('gateway') },
      // node:sqlite is Node's own (core) module: named as depcruise reports it.
      to: { path: [`^node_modules/(${STORAGE_PACKAGES.join('|')})/`, '^(node:)?sqlite$'] },
    },
    {
      name: 'adapters-implement-domain-ports',
      comment:
        'src/store, src/workers and src/net implement domain ports: they may import the domain, not the gateway, ' +
        'the cli, the composition root, nor one another (each is wired to the domain in src/main.ts).',
      severity: 'error',
      from: { path: ADAPTERS },
      to: {
        path: [LAYER('gateway'), LAYER('cli'), COMPOSITION_ROOT, ADAPTERS],
        pathNot: '^src/$1/',
      },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves (a typo in a path is caught here, not at start-up).',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    parser: 'swc',
    doNotFollow: { path: '^node_modules/' },
    exclude: { path: '^(dist|data|models)/' },
    moduleSystems: ['es6', 'cjs'],
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.js', '.cjs', '.mjs', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
