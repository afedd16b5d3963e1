import { M001Initial } from './m001-initial.ts';
import { M002MediaGarbage } from './m002-media-garbage.ts';
import { M003CoveringPhashIndexes } from './m003-covering-phash-indexes.ts';
import { M006IdempotencyLeases } from './m006-idempotency-leases.ts';
import { M007ListedTagCounts } from './m007-listed-tag-counts.ts';
import { M008FoldTagNames } from './m008-fold-tag-names.ts';
import { M009Moderation } from './m009-moderation.ts';
import { M010ModerationJobs } from './m010-moderation-jobs.ts';
import { M011VoteRings } from './m011-vote-rings.ts';
import { M012Pdq } from './m012-pdq.ts';
import { M013KeysetListings } from './m013-keyset-listings.ts';
import { M014TokenScopes } from './m014-token-scopes.ts';
import { M015Webhooks } from './m015-webhooks.ts';
import { M016PdqBlocklist } from './m016-pdq-blocklist.ts';
import { M017TagSearchIndex } from './m017-tag-search-index.ts';
import { M018HumanBoxes } from './m018-human-boxes.ts';
import { M019RankMoves } from './m019-rank-moves.ts';
import { M020QueueKey } from './m020-queue-key.ts';
import { M021ThreeChunkPhash } from './m021-three-chunk-phash.ts';
import { M022WebhookTokenScope } from './m022-webhook-token-scope.ts';
import { M023TagPrefixIndex } from './m023-tag-prefix-index.ts';
import { M024UserRankedIndexes } from './m024-user-ranked-indexes.ts';
import { M025TagLinkListed } from './m025-tag-link-listed.ts';
import { M026VoteFacts } from './m026-vote-facts.ts';
import { M027UserStats } from './m027-user-stats.ts';
import { M028ResumableUploads } from './m028-resumable-uploads.ts';
import { M029Provenance } from './m029-provenance.ts';
import { M030TagLinkDistinct } from './m030-tag-link-distinct.ts';

/** Every migration, in order. Listed explicitly (no file globbing) so they run the same from src/ and dist/. */
export const MIGRATIONS = [
  M001Initial,
  M002MediaGarbage,
  M003CoveringPhashIndexes,
  M006IdempotencyLeases,
  M007ListedTagCounts,
  M008FoldTagNames,
  M009Moderation,
  M010ModerationJobs,
  M011VoteRings,
  M012Pdq,
  M013KeysetListings,
  M014TokenScopes,
  M015Webhooks,
  M016PdqBlocklist,
  M017TagSearchIndex,
  M018HumanBoxes,
  M019RankMoves,
  M020QueueKey,
  M021ThreeChunkPhash,
  M022WebhookTokenScope,
  M023TagPrefixIndex,
  M024UserRankedIndexes,
  M025TagLinkListed,
  M026VoteFacts,
  M027UserStats,
  M028ResumableUploads,
  M029Provenance,
  M030TagLinkDistinct,
];
