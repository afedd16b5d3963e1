import { z } from 'zod';
import { Health, NotReady, Readiness } from '../schemas/common.schemas.ts';
import type { Operation } from './operation.types.ts';

const text = { type: 'string' };
const AssetParams = z.object({
  asset: z
    .string()
    .describe('A file of the bundled renderer.')
    .meta({ examples: ['swagger-ui-bundle.js'] }),
});

export const serviceOperations: Operation[] = [
  {
    method: 'get',
    path: '/healthz',
    operationId: 'health',
    tag: 'operations',
    summary: 'Liveness: 200 while the process runs',
    auth: 'none',
    limit: null,
    responses: { 200: { description: 'Alive.', json: Health, cacheControl: ['no-store'] } },
  },
  {
    method: 'get',
    path: '/readyz',
    operationId: 'ready',
    tag: 'operations',
    summary: 'Readiness: the database, Redis (if configured) and the worker pool answer',
    description:
      'Turns 503 as soon as a graceful shutdown starts. ' +
      'Calls arriving together share one check, at most one per second.',
    auth: 'none',
    limit: null,
    responses: {
      200: { description: 'Ready.', json: Readiness, cacheControl: ['no-store'] },
      503: {
        description: 'Not ready: a dependency did not answer, or the process is shutting down.',
        json: NotReady,
        cacheControl: ['no-store'],
      },
    },
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'metrics',
    tag: 'operations',
    summary: 'Prometheus metrics',
    description:
      'Request counts and latency by route and status, worker pool size, queue depth, task time per pipeline stage, ' +
      'uploads accepted and rejected by reason. Expose it to your scraper only. With `METRICS_TOKEN` set it needs ' +
      '`Authorization: Bearer <METRICS_TOKEN>` (401 `unauthorized` otherwise). ' +
      'Scrapes arriving together share one rendering, at most one per second: ' +
      'a faster scraper sees the same numbers again (the same `ETag`). Gzipped for a scraper that accepts it.',
    auth: 'none',
    limit: null,
    responses: {
      200: {
        description: 'Prometheus text exposition format.',
        other: { 'text/plain': text },
        headers: ['ETag', 'Vary'],
        cacheControl: ['no-store'],
      },
    },
    errors: ['unauthorized'],
  },
  {
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
  },
  {
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
  },
  {
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
  },
];
