/**
 * The server's limits, as the pages show and check them before asking. There is no limits.js file:
 * src/gateway/web-assets.ts serves this module, generated from the constants the server itself enforces
 * (src/gateway/web-limits.ts, which must satisfy this type).
 */
export interface Limits {
  /** Tags one upload may carry. */
  maxTags: number;
  /** Characters in one tag. */
  maxTagLength: number;
  /** Characters in an upload's description. */
  maxDescription: number;
  /** Characters in a report's note. */
  maxReportNote: number;
  /** Bytes in an uploaded image file. */
  maxFileBytes: number;
  /** Characters in an API token's name. */
  maxTokenName: number;
  /** A username, as an HTML `pattern` (the whole value must match). */
  usernamePattern: string;
  /** Characters in a password, at least. */
  minPassword: number;
  /** The reasons a report may give. */
  reportReasons: readonly string[];
  /** The feed's page size (the server embeds the first page asked for with it). */
  feedPageSize: number;
  /** The modlog's page size (the server renders the first page asked for with it). */
  modlogPageSize: number;
  /** Thumbnails of a page loaded eagerly (the server preloads as many). */
  eagerThumbnails: number;
}

export declare const limits: Limits;
