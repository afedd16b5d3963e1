/**
 * Compile-time guard (no runtime code): what the domain returns fits the documented response schemas, and
 * both name the same fields. `npm run typecheck` fails when one side changes without the other.
 */
import type { z } from 'zod';
import type { Session, TokenView as DomainTokenView } from '../../domain/auth/auth.service.ts';
import type { ProfileStats as DomainProfileStats } from '../../domain/feeds/feed.service.ts';
import type { TagSuggestion as DomainTagSuggestion } from '../../domain/tag.service.ts';
import type { TagView } from '../../domain/tags.ts';
import type {
  DuplicateNotice as DomainDuplicateNotice,
  ImageView,
  UploadView,
} from '../../domain/uploads/upload.types.ts';
import type { UserView } from '../../domain/users.ts';
import type { VoteOutcome } from '../../domain/votes/vote.service.ts';
import type { Embed as DomainEmbed } from '../../domain/embeds.ts';
import type { TokenView, UserSchema } from './auth.schemas.ts';
import type { ProfileStats, TagSuggestion, VoteResult } from './community.schemas.ts';
import type { DuplicateNotice, Embed, ImageInfo, Tag, UploadRecord } from './upload.schemas.ts';

type Fits<Domain, Schema extends z.ZodType> = [Domain] extends [z.output<Schema>]
  ? [keyof Domain] extends [keyof z.output<Schema>]
    ? [keyof z.output<Schema>] extends [keyof Domain]
      ? true
      : false
    : false
  : false;
type Assert<T extends true> = T;

export type ResponseTypeChecks = [
  Assert<Fits<UploadView, typeof UploadRecord>>,
  Assert<Fits<ImageView, typeof ImageInfo>>,
  Assert<Fits<DomainEmbed, typeof Embed>>,
  Assert<Fits<TagView, typeof Tag>>,
  Assert<Fits<DomainDuplicateNotice, typeof DuplicateNotice>>,
  Assert<Fits<UserView, typeof UserSchema>>,
  Assert<Fits<DomainTokenView, typeof TokenView>>,
  Assert<Fits<VoteOutcome, typeof VoteResult>>,
  Assert<Fits<DomainProfileStats, typeof ProfileStats>>,
  Assert<Fits<DomainTagSuggestion, typeof TagSuggestion>>,
  Assert<Fits<Session['user'], typeof UserSchema>>,
];
