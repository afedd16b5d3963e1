import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * Scoped and expiring API tokens (issue 31 part 1):
 * - `scopes`: the token's scopes, space-separated in the contract's order (`upload vote read manage moderate`);
 *   null: every scope its owner has (the tokens made before this migration keep working as they did);
 * - `expires_at`: when the token stops working; null: never.
 */
export class M014TokenScopes extends Migration {
  override name = 'm014-token-scopes';

  override up(): void {
    const ts = isPostgres(this.config) ? 'timestamptz(3)' : 'datetime';
    this.addSql('alter table api_tokens add column scopes varchar(64) null');
    this.addSql(`alter table api_tokens add column expires_at ${ts} null`);
  }
}
