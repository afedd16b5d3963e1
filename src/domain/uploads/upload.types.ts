import type { TagView } from '../tags.ts';
import type { Embed } from '../embeds.ts';
import type { PersonBox } from '../person-policy.ts';
import type { Provenance } from './provenance.ts';
import type { AiLabel } from './ai-label.ts';

export type UploadType = 'image' | 'link';
/** API.md Moderation: `held` is out of every listing until a moderator decides; `removed` is a tombstone. */
export type ModerationState = 'visible' | 'held' | 'removed';
export type VoteValue = 'fucks' | 'does_not_fuck';

export interface VariantInfo {
  width: number;
  height: number;
  bytes: number;
}

/** A stored upload as the domain sees it. */
export interface UploadRecord {
  id: string;
  userId: string;
  username: string;
  uploadType: UploadType;
  filename: string | null;
  originalName: string | null;
  description: string;
  externalUrl: string | null;
  sourceUrl: string | null;
  upvotes: number;
  downvoteCount: number;
  isPrivate: boolean;
  createdAt: Date;
  sha256: string | null;
  phash: string | null;
  mediaKey: string | null;
  width: number | null;
  height: number | null;
  animated: boolean | null;
  originalFormat: string | null;
  thumbhash: string | null;
  humanScore: number | null;
  /**
   * The detector's best boxes (fractions of the image, best first) when person detection queued it for review (a
   * person flag or a hold); else null.
   */
  humanBoxes: PersonBox[] | null;
  variants: Record<string, VariantInfo> | null;
  moderation: ModerationState;
  /** Person detection flagged it for review (HUMAN_POLICY flag/hold) and no moderator approved it yet. */
  personFlag: boolean;
  moderatedAt: Date | null;
  /** What the reader found in the original bytes; null for links, older images and under AI_POLICY=off. */
  provenance: Provenance | null;
  /** The label listings filter on: a marker in the file says generated, or the owner marked it; null: no label. */
  aiLabel: AiLabel | null;
  tags: TagView[];
}

/** Who is asking, for visibility rules (private uploads are visible to their owner and admins). */
export interface Viewer {
  userId: string;
  isAdmin: boolean;
}

export interface ImageView {
  width: number;
  height: number;
  mime: 'image/webp';
  animated: boolean;
  url: string;
  thumbnail_url: string;
  thumbhash: string | null;
  human_score: number | null;
}

/** API.md's Upload record. */
export interface UploadView {
  id: string;
  user_id: string;
  username: string;
  filename: string | null;
  original_name: string | null;
  description: string;
  upload_type: UploadType;
  external_url: string | null;
  source_url: string | null;
  upvotes: number;
  downvote_count: number;
  is_private: boolean;
  tags: TagView[];
  created_at: string;
  image: ImageView | null;
  embed: Embed | null;
  moderation: ModerationState;
  /** API.md "Provenance": null for links (and images stored before provenance was read, or under AI_POLICY=off). */
  provenance: Provenance | null;
  /** What the "Made with AI" label rests on: `marker` (in the file), `owner` (marked by hand), null (no label). */
  ai_label: AiLabel | null;
  my_vote?: VoteValue | null;
}

export interface DuplicateNotice {
  duplicate: true;
  existingUploadId: string;
  message: string;
  match: 'exact' | 'near';
  distance: number;
}

export type CreateResult = { kind: 'created'; upload: UploadView } | { kind: 'duplicate'; notice: DuplicateNotice };
