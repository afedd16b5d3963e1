import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.uuid().primary(),
    username: p.string().length(32),
    /** Lowercased copy: usernames are unique case-insensitively on both databases. */
    usernameKey: p.string().length(32).unique(),
    email: p.string().length(254),
    emailKey: p.string().length(254).unique(),
    passwordHash: p.string().length(255).lazy(),
    role: p.string().length(8).default('user'),
    createdAt: p.datetime(3),
    bannedUntil: p.datetime(3).nullable(),
    banReason: p.text().nullable(),
    /** Keyed hash of the sign-up network (m026; nulled past VOTE_FACTS_RETENTION). */
    signupNet: p.string().length(32).nullable(),
    /** User-agent family at sign-up (m026; nulled past VOTE_FACTS_RETENTION). */
    signupUa: p.string().length(16).nullable(),
  },
});
export type IUser = InferEntity<typeof User>;
