import type { Configuration } from '@mikro-orm/core';
import { SqlitePlatform } from '@mikro-orm/sql';

/** Migrations are written once with per-database SQL; this tells them which database they run on. */
export function isPostgres(config: Configuration): boolean {
  return !(config.getPlatform() instanceof SqlitePlatform);
}
