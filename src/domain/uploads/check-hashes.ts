/**
 * The batch pre-check of a bulk client (API.md, Clients at volume): which of these SHA-256 digests an upload would
 * answer as blocked or as a duplicate, so the client sends only the bodies that are new. It answers exactly what
 * an upload of those bytes would: the blocklist first, then an upload the caller may see (listed, or its own and
 * not removed; an admin sees all) — the same visibility rule as the exact-duplicate check, so it reveals nothing
 * an upload would not. Two queries per request, whatever the number of digests.
 */
import type { Principal } from '../users.ts';
import type { Viewer } from './upload.types.ts';

/** At most this many digests per request. */
export const MAX_CHECK_HASHES = 1000;

export type HashStatus = 'new' | 'exists' | 'blocked';

export interface HashCheck {
  sha256: string;
  status: HashStatus;
  /** The oldest upload with these bytes that the caller may see, when `exists`. */
  uploadId: string | null;
}

export interface HashCheckPorts {
  uploads: {
    /** For each digest with an upload the viewer may see: the oldest such upload's id. */
    visibleIdsBySha256(sha256s: readonly string[], viewer: Viewer): Promise<Map<string, string>>;
  };
  blocklist: {
    /** The digests among these that the blocklist holds (exact SHA-256 entries). */
    blockedSha256Among(sha256s: readonly string[]): Promise<Set<string>>;
  };
}

/** Lower-case hex digests, in request order (repeats answered each time); validated by the caller's schema. */
export async function checkHashes(
  ports: HashCheckPorts,
  principal: Principal,
  sha256s: readonly string[],
): Promise<HashCheck[]> {
  const unique = [...new Set(sha256s)];
  const blocked = await ports.blocklist.blockedSha256Among(unique);
  const rest = unique.filter((s) => !blocked.has(s));
  const viewer: Viewer = { userId: principal.userId, isAdmin: principal.isAdmin };
  const existing = rest.length ? await ports.uploads.visibleIdsBySha256(rest, viewer) : new Map<string, string>();
  return sha256s.map((sha256) => {
    if (blocked.has(sha256)) return { sha256, status: 'blocked', uploadId: null };
    const uploadId = existing.get(sha256) ?? null;
    return { sha256, status: uploadId ? 'exists' : 'new', uploadId };
  });
}
