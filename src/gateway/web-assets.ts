/**
 * The pages' static assets (issue 20, issue 28, issue 30): web/app.css, web/icon.svg, and the ES modules of web/ — the
 * boot web/app.js, the shared web/lib/*.js, one web/pages/*.js per page — with the thumbhash package and the generated
 * limits module (src/gateway/web-limits.ts) they import.
 *
 * Each is served from memory under a content-hashed name (`/assets/feed.3f2a9c1b0d4e.js`), compressed once.
 *
 * A page loads one script: its bundle, the boot and the page's module with everything they import, built by esbuild
 * at startup, in memory (minified; pages that share a module share the bundle). One request instead of one per
 * module: on a slow connection each module was a round trip before the page's first paint (Lighthouse counts a
 * page's scripts as render-blocking), and the page's image shared the connections with them.
 *
 * A module that a page loads only when it needs it (`import('../lib/resumable.js')`: the upload form's resumable
 * client, with tus-js-client) is a bundle of its own, fetched by that `import()` under its hashed name; the page's
 * bundle does not carry it.
 *
 * The modules are also served one by one, as the browser would import them unbundled (tests import them to check
 * what the browser builds): every `import … from '…'` and `import('…')` names a module of web/ or one of PACKAGES
 * and is rewritten to that module's hashed path, so a module's hash covers the hashes of all it imports.
 * A specifier that names anything else, a cycle, or two modules of the same file name stop the server at startup.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import {
  build,
  buildSync,
  stop,
  transformSync,
  version as esbuildVersion,
  type BuildOptions,
  type Plugin,
} from 'esbuild';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { limitsModule } from './web-limits.ts';

const require = createRequire(import.meta.url);
const WEB_DIR = new URL('../../web/', import.meta.url);
const BOOT = new URL('app.js', WEB_DIR);
const THUMBHASH = pathToFileURL(require.resolve('thumbhash/thumbhash.js'));
const NODE_MODULES = dirname(dirname(fileURLToPath(THUMBHASH)));
/**
 * The npm packages the pages may import, by name, and the module each is served as one by one: thumbhash's own
 * file (one ES module, no dependencies); tus-js-client's browser build with its dependencies as one ES module
 * (GENERATED, below). In the pages' bundles esbuild resolves them itself, for the browser (their package.json
 * `browser` field). Anything else a page imports from node_modules stops the server at startup.
 */
const PACKAGES: ReadonlyMap<string, URL> = new Map([
  ['thumbhash', THUMBHASH],
  ['tus-js-client', new URL('tus-js-client.js', WEB_DIR)],
]);
/**
 * A relative import of a .ts module (as esbuild writes it, in double quotes), to become the import of the .js
 * module generated from it, in single quotes as STATIC_IMPORT reads it.
 */
const TS_IMPORT = /^((?:import|export)\s+(?:[\w$*{},\s]+?\s+from\s+)?)["'](\.\.?\/[^"']+)\.ts["'];/gm;

/**
 * A module of src/gateway as the JavaScript the pages import (its types stripped); it imports only modules that
 * are generated the same way (`./words.ts` becomes `./words.js`).
 */
const fromGateway = (name: string) => () =>
  `// Generated from src/gateway/${name}: the server runs the same code.\n${transformSync(
    readFileSync(new URL(name, import.meta.url), 'utf8'),
    { loader: 'ts', format: 'esm' },
  ).code.replace(TS_IMPORT, "$1'$2.js';")}`;

/**
 * The pages' views (issue 47): one definition, run by the server (to markup) and by the pages (as DOM), served
 * as web/lib/<name>.js (each has a web/lib/<name>.d.ts for the pages' type check).
 */
const VIEWS = ['vnode', 'words', 'card-view', 'feed-view', 'modlog-view'];

/** What every bundle is built with. */
const BUNDLE_OPTIONS = {
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  // The PACKAGES from our node_modules
  nodePaths: [NODE_MODULES],
  write: false as const,
  logLevel: 'silent',
} satisfies BuildOptions;

/** An npm package (and its dependencies) for the browser, as one ES module. */
const browserPackage = (name: string) => () => {
  const { outputFiles } = buildSync({
    ...BUNDLE_OPTIONS,
    stdin: { contents: `export * from '${name}';\n`, resolveDir: NODE_MODULES, sourcefile: `${name} (package)` },
  });
  const note = `// ${name} for the browser (its package.json's browser build), bundled with its dependencies.\n`;
  return note + outputFiles[0]!.text;
};

/** Modules that are no file of web/: made here. */
const GENERATED = new Map([
  [PACKAGES.get('tus-js-client')!.href, browserPackage('tus-js-client')],
  [new URL('lib/limits.js', WEB_DIR).href, limitsModule],
  // Where a visitor may be sent back to (issue 44): one check, the server's and the pages'.
  [new URL('lib/local-path.js', WEB_DIR).href, fromGateway('local-path.ts')],
  ...VIEWS.map((name) => [new URL(`lib/${name}.js`, WEB_DIR).href, fromGateway(`views/${name}.ts`)] as const),
]);

/** Each page (the shell's `data-page`) → its module in web/, which exports `render(page)`. */
const PAGE_MODULES: Readonly<Record<string, string>> = {
  feed: 'pages/feed.js',
  user: 'pages/feed.js',
  upload: 'pages/upload.js',
  new: 'pages/new.js',
  signin: 'pages/auth.js',
  signup: 'pages/auth.js',
  profile: 'pages/profile.js',
  moderation: 'pages/moderation.js',
  modlog: 'pages/modlog.js',
};

const JS = 'text/javascript; charset=utf-8';

export interface Asset {
  /** Public path, with the content hash: /assets/app.3f2a9c1b0d4e.js */
  path: string;
  type: string;
  raw: Buffer;
  br: Buffer;
  gzip: Buffer;
  etag: string;
}

export interface WebAssets {
  css: Asset;
  icon: Asset;
  /** Every asset by its public path. */
  byPath: Map<string, Asset>;
  /** Whether there is a module for this page. */
  hasPage(page: string): boolean;
  /** The one script a page's shell names in its `<script type="module">`: the boot and the page's module, bundled. */
  bundle(page: string): Asset;
  /** A module of web/ served on its own, by its file name (`cards.js`). */
  module(name: string): Asset | undefined;
  /** The bundle of a module that pages load lazily, by its path in web/ (`lib/resumable.js`). */
  lazy(path: string): Asset | undefined;
}

/**
 * An asset; its compressed forms are made when first asked for, at the best levels, once (the modules served one by
 * one are seldom sent; what pages load is compressed at startup).
 */
function makeAsset(name: string, type: string, raw: Buffer, made: { br?: Buffer; gzip?: Buffer } = {}): Asset {
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 12);
  const dot = name.lastIndexOf('.');
  let { br, gzip } = made;
  return {
    path: `/assets/${name.slice(0, dot)}.${hash}${name.slice(dot)}`,
    type,
    raw,
    get br() {
      return (br ??= brotliCompressSync(raw, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }));
    },
    get gzip() {
      return (gzip ??= gzipSync(raw, { level: 9 }));
    },
    etag: `"${hash}"`,
  };
}

/** A static import or re-export at the start of a line (not an `@import` in a comment), and its specifier. */
const STATIC_IMPORT = /^(?:import|export)\s+(?:[\w$*{},\s]+?\s+from\s+)?'([^']+)';/gm;
/** A dynamic `import('…')` of a module (a JSDoc type names its modules with `@import`, never with this). */
const DYNAMIC_IMPORT = /\bimport\(\s*'([^']+)'\s*\)/g;

/** The module an import of `specifier` in the module at `from` names, or an error when pages may not import it. */
export function resolveImport(specifier: string, from: URL): URL {
  const pkg = PACKAGES.get(specifier);
  if (pkg) return pkg;
  const url = new URL(specifier, from);
  if (!/^\.\.?\//.test(specifier) || !url.href.startsWith(WEB_DIR.href) || !url.pathname.endsWith('.js')) {
    const allowed = ['.js modules of web/', ...PACKAGES.keys()].join(', ');
    throw new Error(`${fileURLToPath(from)} imports '${specifier}': pages import only ${allowed}`);
  }
  return url;
}

/**
 * Loads the module graph from the boot and each page's module, each module once, its imports first; by file name
 * (unique in the graph). `lazy` gets the modules some module loads with `import('…')`, each after those it loads so.
 */
function loadModules(generated: (href: string) => string, lazy: URL[] = []): Map<string, Asset> {
  const modules = new Map<string, Asset>();
  const names = new Map<string, string>();
  const loading = new Set<string>();
  const load = (url: URL): Asset => {
    const done = modules.get(url.href);
    if (done) return done;
    if (loading.has(url.href)) throw new Error(`web/: import cycle through ${fileURLToPath(url)}`);
    loading.add(url.href);
    const name = basename(url.pathname);
    const other = names.get(name);
    if (other !== undefined && other !== url.href)
      throw new Error(`web/: two modules named ${name}: ${other}, ${url.href}`);
    names.set(name, url.href);
    const source = GENERATED.has(url.href) ? generated(url.href) : readFileSync(url, 'utf8');
    const served = source
      .replace(STATIC_IMPORT, (statement: string, specifier: string) =>
        statement.replace(`'${specifier}'`, `'${load(resolveImport(specifier, url)).path}'`),
      )
      .replace(DYNAMIC_IMPORT, (_: string, specifier: string) => {
        const target = resolveImport(specifier, url);
        const path = load(target).path;
        if (!lazy.some((u) => u.href === target.href)) lazy.push(target);
        return `import('${path}')`;
      });
    const asset = makeAsset(name, JS, Buffer.from(served));
    loading.delete(url.href);
    modules.set(url.href, asset);
    return asset;
  };
  load(BOOT);
  for (const path of Object.values(PAGE_MODULES)) load(new URL(path, WEB_DIR));
  return new Map([...names].map(([name, href]) => [name, modules.get(href)!]));
}

/** Serves esbuild the modules that are no file of web/ (GENERATED) from memory. */
const generatedModules: Plugin = {
  name: 'pixvote-generated',
  setup(b) {
    b.onResolve({ filter: /\.js$/ }, (args) => {
      const href = args.resolveDir ? new URL(args.path, pathToFileURL(`${args.resolveDir}/`)).href : '';
      return GENERATED.has(href) ? { path: href, namespace: 'generated' } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'generated' }, (args) => ({
      contents: generatedSource(args.path),
      loader: 'js',
      // Its imports (of other generated modules) resolve beside it.
      resolveDir: fileURLToPath(new URL('.', args.path)),
    }));
  },
};

/**
 * A bundle's `import('…')` of a module of web/: that module's own bundle, by its hashed path (`lazy`, by href), left
 * for the browser to fetch when the code runs.
 */
const lazyModules = (lazy: ReadonlyMap<string, Asset>): Plugin => ({
  name: 'pixvote-lazy',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind !== 'dynamic-import') return undefined;
      const asset = lazy.get(new URL(args.path, pathToFileURL(`${args.resolveDir}/`)).href);
      if (!asset) return { errors: [{ text: `import('${args.path}'): no bundle of that module was built first` }] };
      return { path: asset.path, external: true };
    });
  },
});

/**
 * One bundle per page module: the boot and the module, with all they import, as one minified ES module; and one per
 * module loaded lazily (`lazy`, each after those it loads so), by its path in web/ (`lib/resumable.js`).
 */
async function bundlePages(lazy: readonly URL[]): Promise<Map<string, Asset>> {
  const bundles = new Map<string, Asset>();
  const lazyByHref = new Map<string, Asset>();
  const plugins = [lazyModules(lazyByHref), generatedModules];
  try {
    for (const url of lazy) {
      const { outputFiles } = await build({ ...BUNDLE_OPTIONS, entryPoints: [fileURLToPath(url)], plugins });
      const asset = makeAsset(basename(url.pathname), JS, Buffer.from(outputFiles[0]!.contents));
      lazyByHref.set(url.href, asset);
      bundles.set(url.href.slice(WEB_DIR.href.length), asset);
    }
    for (const path of new Set(Object.values(PAGE_MODULES))) {
      const { outputFiles } = await build({
        ...BUNDLE_OPTIONS,
        stdin: {
          contents: `import { boot } from './app.js';\nimport * as page from './${path}';\nawait boot(page);\n`,
          resolveDir: fileURLToPath(WEB_DIR),
          sourcefile: `${path} (bundle)`,
        },
        plugins,
      });
      bundles.set(path, makeAsset(basename(path), JS, Buffer.from(outputFiles[0]!.contents)));
    }
  } finally {
    // esbuild's service process is not needed again.
    await stop();
  }
  return bundles;
}

let loaded: WebAssets | undefined;
let loading: Promise<WebAssets> | undefined;

/** Loads, bundles and hashes the assets, once per process (they do not change while it runs); main awaits it. */
export function webAssetsReady(): Promise<WebAssets> {
  return (loading ??= loadWebAssets().then((assets) => (loaded = assets)));
}

/** The assets, once `webAssetsReady()` has settled. */
export function webAssets(): WebAssets {
  if (!loaded) throw new Error('the web assets are not loaded: await webAssetsReady() first');
  return loaded;
}

/** The generated modules' sources made in this process (esbuild's transform), each once. */
const generatedSources = new Map<string, string>();
function generatedSource(href: string): string {
  let source = generatedSources.get(href);
  if (source === undefined) generatedSources.set(href, (source = GENERATED.get(href)!()));
  return source;
}

/**
 * What a build made, kept on disk between processes (node_modules/.cache/pixvote-web/): esbuild's bundles and
 * transforms and the Brotli-11 and gzip-9 forms of what every page loads are ~1.5 s of CPU at every start, and every
 * start (each test file's app, each gateway process, each restart) would make the very same bytes. Named by a digest
 * of everything the bytes are made from (every file of web/, the server modules the pages import, the limits module,
 * thumbhash, esbuild's version and this file), so an entry is only ever read for the inputs that made it. Where the
 * directory cannot be written (a read-only install), every start builds, as it did without it.
 */
interface BuildCache {
  generated: Record<string, string>;
  bundles: Record<string, { raw: string; br: string; gzip: string }>;
  compressed: Record<string, { br: string; gzip: string }>;
}
const CACHE_DIR = new URL('../../node_modules/.cache/pixvote-web/', import.meta.url);

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

function inputsDigest(): string {
  const h = createHash('sha256').update(`v1 esbuild ${esbuildVersion}\0`);
  const add = (label: string, content: string | Buffer) => h.update(`${label}\0${content.length}\0`).update(content);
  for (const file of filesUnder(fileURLToPath(WEB_DIR))) add(file, readFileSync(file));
  for (const href of GENERATED.keys()) add(href, '');
  add('limits', limitsModule());
  add('thumbhash', readFileSync(THUMBHASH));
  // What else is bundled from node_modules: each package's version, and its dependencies' (an install changes them).
  for (const name of PACKAGES.keys()) if (name !== 'thumbhash') for (const v of packageVersions(name)) add('npm', v);
  add('self', readFileSync(new URL(import.meta.url)));
  for (const name of ['local-path.ts', ...VIEWS.map((v) => `views/${v}.ts`)])
    add(name, readFileSync(new URL(name, import.meta.url)));
  return h.digest('hex').slice(0, 32);
}

/** `name@version` of an installed package and of every package it depends on, found as Node finds them. */
function packageVersions(name: string): string[] {
  const seen = new Map<string, string>();
  const visit = (pkg: string, fromDir: string) => {
    for (let dir = fromDir; ; dir = dirname(dir)) {
      const file = join(dir, 'node_modules', pkg, 'package.json');
      let manifest: { version?: string; dependencies?: Record<string, string> };
      try {
        manifest = JSON.parse(readFileSync(file, 'utf8')) as typeof manifest;
      } catch {
        if (dirname(dir) === dir) throw new Error(`web assets: the package ${pkg} is not installed`);
        continue;
      }
      if (seen.has(file)) return;
      seen.set(file, `${pkg}@${manifest.version}`);
      for (const dep of Object.keys(manifest.dependencies ?? {})) visit(dep, dirname(file));
      return;
    }
  };
  visit(name, dirname(NODE_MODULES));
  return [...seen.values()].sort();
}

function readCache(file: URL): BuildCache | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as BuildCache;
  } catch {
    return null;
  }
}

function writeCache(file: URL, cache: BuildCache): void {
  try {
    mkdirSync(new URL('.', file), { recursive: true });
    // Whole or not at all: written beside, then renamed over (another process may be writing the same entry).
    const tmp = new URL(`${basename(file.pathname)}.${process.pid}.tmp`, file);
    writeFileSync(tmp, JSON.stringify(cache));
    renameSync(tmp, file);
    pruneCache(new URL('.', file));
  } catch {
    // A read-only install: the next start builds again.
  }
}

/** Entries kept: each edit of the pages makes one (~240 KB); the newest few serve checkouts switched back and forth. */
const CACHE_KEPT = 8;

/** Drops all but the CACHE_KEPT newest entries (an entry another process removes first is simply gone). */
function pruneCache(dir: URL): void {
  const path = fileURLToPath(dir);
  const entries = readdirSync(path)
    .filter((name) => name.endsWith('.json'))
    .map((name) => {
      try {
        return { name, at: statSync(join(path, name)).mtimeMs };
      } catch {
        return null;
      }
    })
    .filter((e) => e !== null)
    .sort((a, b) => b.at - a.at);
  for (const { name } of entries.slice(CACHE_KEPT)) rmSync(join(path, name), { force: true });
}

const b64 = (b: Buffer) => b.toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64');

/** Loads, bundles and hashes the assets (from the build cache in `cacheDir` when the inputs are the same). */
export async function loadWebAssets(cacheDir: URL = CACHE_DIR): Promise<WebAssets> {
  const cacheFile = new URL(`${inputsDigest()}.json`, cacheDir);
  const cached = readCache(cacheFile);
  const read = (file: string) => readFileSync(new URL(file, WEB_DIR));
  const css = makeAsset('app.css', 'text/css; charset=utf-8', read('app.css'), {
    ...(cached?.compressed.css && { br: unb64(cached.compressed.css.br), gzip: unb64(cached.compressed.css.gzip) }),
  });
  const icon = makeAsset('icon.svg', 'image/svg+xml', read('icon.svg'), {
    ...(cached?.compressed.icon && { br: unb64(cached.compressed.icon.br), gzip: unb64(cached.compressed.icon.gzip) }),
  });
  const lazy: URL[] = [];
  const byName = loadModules((href) => cached?.generated[href] ?? generatedSource(href), lazy);
  const modules = [...byName.values()];
  const bundles = cached
    ? new Map(
        Object.entries(cached.bundles).map(([path, b]) => [
          path,
          makeAsset(basename(path), JS, unb64(b.raw), { br: unb64(b.br), gzip: unb64(b.gzip) }),
        ]),
      )
    : await bundlePages(lazy);
  // A bundle and the module of the same name differ in content, so in hash and path.
  const byPath = new Map<string, Asset>([css, icon, ...modules, ...bundles.values()].map((a) => [a.path, a]));
  // What every page loads is compressed now, not by its first request's event-loop turn (~20 ms each at Brotli 11).
  for (const asset of [css, icon, ...bundles.values()]) void [asset.br, asset.gzip];
  if (!cached) {
    const compressedOf = (a: Asset) => ({ br: b64(a.br), gzip: b64(a.gzip) });
    writeCache(cacheFile, {
      generated: Object.fromEntries([...GENERATED.keys()].map((href) => [href, generatedSource(href)])),
      bundles: Object.fromEntries([...bundles].map(([path, a]) => [path, { raw: b64(a.raw), ...compressedOf(a) }])),
      compressed: { css: compressedOf(css), icon: compressedOf(icon) },
    });
  }
  return {
    css,
    icon,
    byPath,
    hasPage: (page) => Object.hasOwn(PAGE_MODULES, page),
    bundle: (page) => {
      const bundle = Object.hasOwn(PAGE_MODULES, page) ? bundles.get(PAGE_MODULES[page]!) : undefined;
      if (!bundle) throw new Error(`web: no module for the page ${page}`);
      return bundle;
    },
    module: (name) => byName.get(name),
    lazy: (path) => bundles.get(path),
  };
}
