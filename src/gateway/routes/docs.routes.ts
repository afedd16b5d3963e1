import { z } from 'zod';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { errors } from '../../domain/errors.ts';
import { sendWithEtag } from '../fresh.ts';
import { DOCUMENT_HEADERS } from '../security-headers.ts';
import { routes } from './route.ts';

/**
 * `GET /api/openapi.json`, and `GET /docs`: the reference page, rendered by Swagger UI from that document.
 * Everything the page loads is served from here (swagger-ui-dist from npm), so it works offline.
 */
const require = createRequire(import.meta.url);
const uiDir = dirname(require.resolve('swagger-ui-dist/package.json'));

// No inline script or style: the page's CSP allows scripts and styles from this origin only.
const INIT_JS = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/api/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    docExpansion: 'list',
    defaultModelsExpandDepth: 0
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pixvote API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<nav class="site" aria-label="Site"><a href="/">← Back to pixvote</a></nav>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/docs-init.js"></script>
</body>
</html>
`;

/**
 * What Swagger UI needs: its script and stylesheet from here, SVG icons as data: URLs,
 * fetches of the document and of "try it out".
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  'img-src data:',
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  type: string;
  load: () => Buffer;
}

const ASSETS: Record<string, Asset> = {
  'swagger-ui-bundle.js': {
    type: 'text/javascript; charset=utf-8',
    load: () => readFileSync(join(uiDir, 'swagger-ui-bundle.js')),
  },
  'swagger-ui.css': { type: 'text/css; charset=utf-8', load: () => readFileSync(join(uiDir, 'swagger-ui.css')) },
  'docs-init.js': { type: 'text/javascript; charset=utf-8', load: () => Buffer.from(INIT_JS) },
};

const etagOf = (bytes: Buffer | string) => `"${createHash('sha1').update(bytes).digest('base64url')}"`;

/** Loaded on first request and kept: the files only change with the package. */
function memo<T>(load: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= load());
}

const text = { type: 'string' };
const AssetParams = z.object({
  asset: z
    .string()
    .describe('A file of the bundled renderer.')
    .meta({ examples: ['swagger-ui-bundle.js'] }),
});

/** `document`: the OpenAPI document (built from every route's declaration, this file's too). */
export const docsRoutes = routes<{ document: () => unknown }>((route) => [
  route({
    method: 'get',
    path: '/api/openapi.json',
    operationId: 'openapi',
    tag: 'operations',
    summary: 'This document (OpenAPI 3.1)',
    auth: 'none',
    limit: 'general',
    responses: {
      200: {
        description: 'The OpenAPI document.',
        other: { 'application/json': { type: 'object' } },
        headers: ['ETag'],
        cacheControl: ['public, no-cache'],
      },
    },
    handler: (deps) => {
      const spec = memo(() => {
        const json = JSON.stringify(deps.document());
        return { json, etag: etagOf(json) };
      });
      return (ctx) => {
        const { json, etag } = spec();
        sendWithEtag(ctx, json, 'application/json; charset=utf-8', etag, 'public, no-cache');
      };
    },
  }),
  route({
    method: 'get',
    path: '/docs',
    operationId: 'docs',
    tag: 'operations',
    summary: 'The API reference page (HTML), rendered from this document',
    auth: 'none',
    limit: 'general',
    internal: true,
    responses: {
      200: {
        description: 'HTML page.',
        other: { 'text/html': text },
        headers: ['Content-Security-Policy'],
        cacheControl: ['public, no-cache'],
      },
    },
    handler: () => (ctx) => {
      ctx.set('Content-Security-Policy', DOCS_CSP);
      // An HTML document: helmet's document-only headers too (opener isolation, no DNS prefetch…).
      for (const [name, value] of DOCUMENT_HEADERS) ctx.set(name, value);
      ctx.set('Cache-Control', 'public, no-cache');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = PAGE;
    },
  }),
  route({
    method: 'get',
    path: '/docs/:asset',
    operationId: 'docsAsset',
    tag: 'operations',
    summary: 'A script or stylesheet of the reference page',
    auth: 'none',
    limit: 'general',
    internal: true,
    params: AssetParams,
    responses: {
      200: {
        description: 'The file.',
        other: { 'text/javascript': text, 'text/css': text },
        headers: ['ETag'],
        cacheControl: ['public, max-age=86400'],
      },
    },
    errors: ['not_found'],
    handler: () => {
      const assets = new Map(
        Object.entries(ASSETS).map(([name, a]) => [
          name,
          {
            type: a.type,
            load: memo(() => {
              const bytes = a.load();
              return { bytes, etag: etagOf(bytes) };
            }),
          },
        ]),
      );
      return (ctx, { params }) => {
        const asset = assets.get(params.asset);
        if (!asset) throw errors.notFound(`no file ${params.asset} in the API reference page`);
        const { bytes, etag } = asset.load();
        sendWithEtag(ctx, bytes, asset.type, etag, 'public, max-age=86400');
      };
    },
  }),
]);
