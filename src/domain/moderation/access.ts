/**
 * Who may reach a single upload in a moderation state (API.md Moderation, States): a held upload is there only
 * for its owner and admins (everyone else: 404, as if it did not exist); a removed one is a tombstone that only
 * admins read (everyone else: 410 `removed`).
 */
import { errors } from '../errors.ts';
import type { ModerationState } from '../uploads/upload.types.ts';

export interface Reader {
  userId: string;
  isAdmin: boolean;
}

export function assertReachable(
  u: { id: string; userId: string; moderation: ModerationState },
  reader: Reader | null,
): void {
  if (reader?.isAdmin) return;
  if (u.moderation === 'removed') throw errors.removed(`upload ${u.id} was removed by the moderators`);
  if (u.moderation === 'held' && reader?.userId !== u.userId) throw errors.notFound(`upload ${u.id} does not exist`);
}
