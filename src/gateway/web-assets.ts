/**
 * The pages' static assets (issue 20, issue 28): web/app.css, web/icon.svg, and the ES modules of web/ — the entry
 * web/app.js, the shared web/lib/*.js, one web/pages/*.js per page — with the thumbhash package and the generated
 * limits module (src/gateway/web-limits.ts) they import.
 *
 * Each is served from memory under a content-hashed name (`/assets/feed.3f2a9c1b0d4e.js`), precompressed. The
 * modules are read as the browser will: starting at web/app.js, every `import … from '…'` and `import('…')` names
 * a module of web/ (or `thumbhash`) and is rewritten to that module's hashed path, so a module's hash covers the
 * hashes of all it imports and a changed module renames every module above it. A specifier that names anything
 * else, a cycle, or two modules of the same file name stop the server at startup.
 *
 * The entry maps each page name to its module (`feed: () => import('./pages/feed.js')`): the page's shell preloads
 * that module's static imports and the entry's (`preloads(page)`), so a first load asks for them all at once
 * instead of discovering them import by import.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { limitsModule } from './web-limits.ts';

const require = createRequire(import.meta.url);
const WEB_DIR = new URL('../../web/', import.meta.url);
const ENTRY = new URL('app.js', WEB_DIR);
const THUMBHASH = pathToFileURL(require.resolve('thumbhash/thumbhash.js'));
/** Modules that are no file of web/: made here. */
const GENERATED = new Map([[new URL('lib/limits.js', WEB_DIR).href, limitsModule]]);

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

interface ModuleAsset extends Asset {
  /** What its static imports name (dynamic `import()`s load later, on demand). */
  imports: ModuleAsset[];
}

export interface WebAssets {
  css: Asset;
  icon: Asset;
  /** The entry module the page's shell names in its `<script type="module">`. */
  app: Asset;
  /** Every asset by its public path. */
  byPath: Map<string, Asset>;
  /** Whether the entry has a module for this page. */
  hasPage(page: string): boolean;
  /** The paths of the modules a page needs besides the entry: the entry's static imports and the page module's. */
  preloads(page: string): string[];
}

function makeAsset(name: string, type: string, raw: Buffer): Asset {
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 12);
  const dot = name.lastIndexOf('.');
  return {
    path: `/assets/${name.slice(0, dot)}.${hash}${name.slice(dot)}`,
    type,
    raw,
    br: brotliCompressSync(raw, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }),
    gzip: gzipSync(raw, { level: 9 }),
    etag: `"${hash}"`,
  };
}

/** A static import or re-export at the start of a line (not an `@import` in a comment), and its specifier. */
const STATIC_IMPORT = /^(?:import|export)\s+(?:[\w$*{},\s]+?\s+from\s+)?'([^']+)';/gm;
const DYNAMIC_IMPORT = /\bimport\('([^']+)'\)/g;
/** The entry's page table: `feed: () => import('./pages/feed.js'),`. */
const PAGE_ENTRY = /^\s*(\w+): \(\) => import\('([^']+)'\),?$/gm;

function resolve(specifier: string, from: URL): URL {
  if (specifier === 'thumbhash') return THUMBHASH;
  const url = new URL(specifier, from);
  if (!/^\.\.?\//.test(specifier) || !url.href.startsWith(WEB_DIR.href) || !url.pathname.endsWith('.js')) {
    throw new Error(
      `${fileURLToPath(from)} imports '${specifier}': pages import only .js modules of web/ or thumbhash`,
    );
  }
  return url;
}

/** Loads the module graph from the entry, each module once, its imports first. */
function loadModules(): { modules: Map<string, ModuleAsset>; names: Map<string, string> } {
  const modules = new Map<string, ModuleAsset>();
  const names = new Map<string, string>();
  const loading = new Set<string>();
  const load = (url: URL): ModuleAsset => {
    const done = modules.get(url.href);
    if (done) return done;
    if (loading.has(url.href)) throw new Error(`web/: import cycle through ${fileURLToPath(url)}`);
    loading.add(url.href);
    const name = basename(url.pathname);
    const other = names.get(name);
    if (other !== undefined && other !== url.href)
      throw new Error(`web/: two modules named ${name}: ${other}, ${url.href}`);
    names.set(name, url.href);
    const generate = GENERATED.get(url.href);
    const source = generate ? generate() : readFileSync(url, 'utf8');
    const imports: ModuleAsset[] = [];
    const rewrite = (isStatic: boolean) => (statement: string, specifier: string) => {
      const dep = load(resolve(specifier, url));
      if (isStatic) imports.push(dep);
      return statement.replace(`'${specifier}'`, `'${dep.path}'`);
    };
    const served = source.replace(STATIC_IMPORT, rewrite(true)).replace(DYNAMIC_IMPORT, rewrite(false));
    const asset = { ...makeAsset(name, JS, Buffer.from(served)), imports };
    loading.delete(url.href);
    modules.set(url.href, asset);
    return asset;
  };
  load(ENTRY);
  return { modules, names };
}

/** A module's static imports, all the way down (itself excluded), each once. */
function staticGraph(module: ModuleAsset, into = new Set<ModuleAsset>()): Set<ModuleAsset> {
  for (const dep of module.imports) {
    if (into.has(dep)) continue;
    into.add(dep);
    staticGraph(dep, into);
  }
  return into;
}

let loaded: WebAssets | undefined;

/** The assets, loaded and hashed once per process (they do not change while it runs). */
export function webAssets(): WebAssets {
  return (loaded ??= loadWebAssets());
}

/** Loads and hashes the assets. */
export function loadWebAssets(): WebAssets {
  const read = (file: string) => readFileSync(new URL(file, WEB_DIR));
  const css = makeAsset('app.css', 'text/css; charset=utf-8', read('app.css'));
  const icon = makeAsset('icon.svg', 'image/svg+xml', read('icon.svg'));
  const { modules } = loadModules();
  const app = modules.get(ENTRY.href)!;

  const preloads = new Map<string, string[]>();
  for (const [, page, specifier] of readFileSync(ENTRY, 'utf8').matchAll(PAGE_ENTRY)) {
    const module = modules.get(resolve(specifier!, ENTRY).href)!;
    const graph = staticGraph(app);
    graph.add(module);
    staticGraph(module, graph);
    preloads.set(
      page!,
      [...graph].map((m) => m.path),
    );
  }

  const byPath = new Map<string, Asset>([css, icon, ...modules.values()].map((a) => [a.path, a]));
  return {
    css,
    icon,
    app,
    byPath,
    hasPage: (page) => preloads.has(page),
    preloads: (page) => preloads.get(page) ?? [],
  };
}
