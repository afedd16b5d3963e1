import type { VoteService } from '../../domain/votes/vote.service.ts';
import { VoteBody, VoteResult } from '../schemas/community.schemas.ts';
import { routes } from './route.ts';
import type { ClientFactsReader } from '../client-facts.ts';

export const voteRoutes = routes<{ votes: VoteService; facts: ClientFactsReader }>((route) => [
  route({
    method: 'post',
    path: '/api/vote',
    operationId: 'vote',
    tag: 'votes',
    summary: 'Vote on an upload, move the vote, or retract it',
    description:
      'One vote per user per upload: voting again with another value moves it, the same value is a no-op, ' +
      '`none` retracts. Counts stay exact under any concurrency. ' +
      'An `uploadId` that is not a UUID is 400 `invalid_request`; an unknown upload is 404, and so is a held one ' +
      "that is not the caller's (unless an admin); a removed one is 410 `removed`. An account younger than " +
      '`VOTE_MIN_ACCOUNT_AGE` is 403 `account_too_new` (retracting with `none` stays allowed).',
    auth: 'required',
    scope: 'vote',
    limit: 'vote',
    body: { json: VoteBody },
    responses: { 200: { description: "The caller's vote and the upload's counts.", json: VoteResult } },
    errors: ['invalid_request', 'account_too_new', 'not_found', 'removed'],
    handler:
      (deps) =>
      async (ctx, { user, body }) => {
        // The voter's network hash and user-agent family, kept as vote-ring evidence (docs/vote-rings.md).
        ctx.body = await deps.votes.vote(user, body.uploadId, body.vote, deps.facts.of(ctx));
      },
  }),
]);
