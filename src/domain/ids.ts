const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID string. Ids that are not UUIDs cannot exist, so lookups answer 404 without asking the database. */
export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID_RE.test(s);
