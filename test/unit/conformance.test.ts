import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkConformance, ConformanceError, type Observed } from '../support/conformance.ts';

const limited = {
  'x-request-id': 'r1',
  'ratelimit-limit': '600',
  'ratelimit-remaining': '599',
  'ratelimit-reset': '900',
};
const json = { 'content-type': 'application/json; charset=utf-8' };

function reply(
  method: string,
  path: string,
  status: number,
  headers: Record<string, string>,
  body?: unknown,
): Observed {
  return {
    method,
    url: `http://127.0.0.1:1${path}`,
    status,
    headers: new Headers(headers),
    text: body === undefined ? '' : JSON.stringify(body),
  };
}

const vote = { uploadId: '7c9e6679-7425-40de-944b-e07fc1f90ae7', vote: 'fucks', upvotes: 1, downvote_count: 0 };

test('a response as documented passes', () => {
  checkConformance(reply('POST', '/api/vote', 200, { ...limited, ...json }, vote));
  checkConformance(
    reply(
      'GET',
      '/healthz',
      200,
      { 'x-request-id': 'r1', 'cache-control': 'no-store', etag: 'W/"x"', ...json },
      { status: 'ok' },
    ),
  );
});

test('drift from the document fails: a wrong type, a missing or an undocumented field', () => {
  for (const body of [
    { ...vote, upvotes: '1' },
    { ...vote, vote: 'maybe' },
    { uploadId: vote.uploadId, vote: null, upvotes: 0 },
    { ...vote, score: 3 },
  ]) {
    assert.throws(
      () => checkConformance(reply('POST', '/api/vote', 200, { ...limited, ...json }, body)),
      ConformanceError,
      JSON.stringify(body),
    );
  }
});

test('an undocumented status, error code, media type or route fails', () => {
  assert.throws(
    () => checkConformance(reply('POST', '/api/vote', 201, { ...limited, ...json }, vote)),
    /status 201 is not documented/,
  );
  assert.throws(
    () =>
      checkConformance(
        reply(
          'POST',
          '/api/vote',
          400,
          { ...limited, ...json, 'cache-control': 'no-store' },
          { error: 'too_many_tags', message: 'x' },
        ),
      ),
    /must be equal to one of the allowed values/,
  );
  assert.throws(
    () => checkConformance(reply('POST', '/api/vote', 200, { ...limited, 'content-type': 'text/html' }, vote)),
    /Content-Type text\/html/,
  );
  assert.throws(
    () =>
      checkConformance(
        reply('GET', '/api/nothing', 404, { ...limited, ...json }, { error: 'not_found', message: 'x' }),
      ),
    /no operation/,
  );
});

test('documented headers are required and well-formed', () => {
  const { 'ratelimit-remaining': _, ...withoutRemaining } = limited;
  assert.throws(
    () => checkConformance(reply('POST', '/api/vote', 200, { ...withoutRemaining, ...json }, vote)),
    /RateLimit-Remaining is missing/,
  );
  assert.throws(
    () => checkConformance(reply('POST', '/api/vote', 200, { ...limited, 'ratelimit-reset': 'soon', ...json }, vote)),
    /RateLimit-Reset/,
  );
  const tooMany = { ...limited, ...json, 'cache-control': 'no-store' };
  assert.throws(
    () => checkConformance(reply('POST', '/api/vote', 429, tooMany, { error: 'rate_limited', message: 'x' })),
    /Retry-After is missing/,
  );
  checkConformance(
    reply('POST', '/api/vote', 429, { ...tooMany, 'retry-after': '30' }, { error: 'rate_limited', message: 'x' }),
  );
  assert.throws(
    () =>
      checkConformance(
        reply(
          'GET',
          '/api/uploads',
          200,
          { ...limited, ...json, etag: 'W/"x"', 'cache-control': 'no-cache' },
          { uploads: [], page: 1, limit: 12, has_more: false },
        ),
      ),
    /Cache-Control/,
  );
});
