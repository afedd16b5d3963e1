import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { User } from './user.entity.ts';

/**
 * A user's profile counters (m027, issue 46), kept by the database's triggers with every write to the rows they
 * count, whatever the path (an upload, a vote, a vote-ring void or restore, a delete and its cascades): what
 * `GET /api/profile` shows, read by primary key instead of summed over the user's uploads and votes.
 * Two tables, so that a vote's transaction locks the voter's `votes_cast` and the author's received counts in
 * rows of different tables: two users voting on each other's uploads cannot deadlock.
 */
export const UserUploadStats = defineEntity({
  name: 'UserUploadStats',
  tableName: 'user_upload_stats',
  properties: {
    user: () => p.manyToOne(User).primary().deleteRule('cascade'),
    /** Their uploads, in every state (the rows of `uploads` with their user_id). */
    uploads: p.integer().default(0),
    /** The sum of their uploads' `upvotes`. */
    upvotesReceived: p.integer().default(0),
    /** The sum of their uploads' `downvote_count`. */
    downvotesReceived: p.integer().default(0),
  },
});
export type IUserUploadStats = InferEntity<typeof UserUploadStats>;

export const UserVoteStats = defineEntity({
  name: 'UserVoteStats',
  tableName: 'user_vote_stats',
  properties: {
    user: () => p.manyToOne(User).primary().deleteRule('cascade'),
    /** Their rows of `votes`. */
    votesCast: p.integer().default(0),
  },
});
export type IUserVoteStats = InferEntity<typeof UserVoteStats>;
