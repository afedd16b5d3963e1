import { buildEmbed } from '../embeds.ts';
import type { UploadRecord, UploadView, VoteValue } from './upload.types.ts';

/** Maps a stored upload onto API.md's Upload record. */
export function toUploadView(u: UploadRecord, myVote?: VoteValue | null): UploadView {
  const view: UploadView = {
    id: u.id,
    user_id: u.userId,
    username: u.username,
    filename: u.filename,
    original_name: u.originalName,
    description: u.description,
    upload_type: u.uploadType,
    external_url: u.externalUrl,
    source_url: u.sourceUrl,
    upvotes: u.upvotes,
    downvote_count: u.downvoteCount,
    is_private: u.isPrivate,
    tags: u.tags,
    created_at: u.createdAt.toISOString(),
    image:
      u.uploadType === 'image' && u.width !== null && u.height !== null
        ? {
            width: u.width,
            height: u.height,
            mime: 'image/webp',
            animated: u.animated ?? false,
            url: `/api/image/${u.id}`,
            thumbnail_url: `/api/image/${u.id}?size=thumb`,
            thumbhash: u.thumbhash,
            human_score: u.humanScore,
          }
        : null,
    embed: u.uploadType === 'link' && u.externalUrl ? buildEmbed(new URL(u.externalUrl)) : null,
    moderation: u.moderation,
    provenance: u.uploadType === 'image' ? u.provenance : null,
    ai_label: u.aiLabel,
  };
  if (myVote !== undefined) view.my_vote = myVote;
  return view;
}
