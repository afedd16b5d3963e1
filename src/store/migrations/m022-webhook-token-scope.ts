import { Migration } from '@mikro-orm/migrations';
import { isPostgres } from './dialect-of.ts';

/**
 * The credential behind a webhook endpoint (issue 44): `webhook_endpoints.token_id`, the API token that created or
 * last changed it, whose scopes bound what it receives; null: a JWT or the cookie (every scope of the user). No
 * foreign key: a revoked token's row is deleted, and the id that no longer finds one is what stops the moderation
 * events (outbox.ts). Endpoints made before this migration have null, as they were taken to have every scope.
 */
export class M022WebhookTokenScope extends Migration {
  override name = 'm022-webhook-token-scope';

  override up(): void {
    this.addSql(`alter table webhook_endpoints add column token_id ${isPostgres(this.config) ? 'uuid' : 'text'} null`);
  }
}
