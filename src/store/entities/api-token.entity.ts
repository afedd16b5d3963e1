import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { User } from './user.entity.ts';

export const ApiToken = defineEntity({
  name: 'ApiToken',
  tableName: 'api_tokens',
  properties: {
    id: p.uuid().primary(),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    name: p.string().length(100),
    /** SHA-256 of the secret, hex. The secret itself is never stored. */
    tokenHash: p.string().length(64).unique(),
    createdAt: p.datetime(3),
    lastUsedAt: p.datetime(3).nullable(),
    /** The scopes, space-separated in the contract's order; null: every scope the owner has. */
    scopes: p.string().length(64).nullable(),
    /** When the token stops working; null: never. */
    expiresAt: p.datetime(3).nullable(),
  },
});
export type IApiToken = InferEntity<typeof ApiToken>;
