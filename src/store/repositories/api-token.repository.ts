import type { ApiTokenRecord, ApiTokenStore } from '../../domain/auth/auth.service.ts';
import { loadScopes, storeScopes } from '../../domain/auth/scopes.ts';
import type { UserRecord } from '../../domain/users.ts';
import { userRecordOf } from './user.repository.ts';
import type { Database } from '../database.ts';
import { ApiToken, type IApiToken } from '../entities/index.ts';

function toRecord(t: IApiToken): ApiTokenRecord {
  return {
    id: t.id,
    userId: t.user.id,
    name: t.name,
    tokenHash: t.tokenHash,
    createdAt: t.createdAt,
    lastUsedAt: t.lastUsedAt ?? null,
    scopes: loadScopes(t.scopes ?? null),
    expiresAt: t.expiresAt ?? null,
  };
}

export class ApiTokenRepository implements ApiTokenStore {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async create(t: ApiTokenRecord): Promise<void> {
    const em = this.#db.em();
    em.create(ApiToken, {
      id: t.id,
      user: t.userId,
      name: t.name,
      tokenHash: t.tokenHash,
      createdAt: t.createdAt,
      lastUsedAt: null,
      scopes: storeScopes(t.scopes),
      expiresAt: t.expiresAt,
    });
    await em.flush();
  }

  async listForUser(userId: string): Promise<ApiTokenRecord[]> {
    const rows = await this.#db.em().find(ApiToken, { user: userId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return rows.map(toRecord);
  }

  async delete(userId: string, id: string): Promise<boolean> {
    return (await this.#db.em().nativeDelete(ApiToken, { id, user: userId })) > 0;
  }

  async findByHash(tokenHash: string): Promise<{ token: ApiTokenRecord; user: UserRecord } | null> {
    const t = await this.#db.em().findOne(ApiToken, { tokenHash }, { populate: ['user'] });
    if (!t) return null;
    const u = t.user;
    return {
      token: toRecord(t),
      user: userRecordOf(u),
    };
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.#db.em().nativeUpdate(ApiToken, { id }, { lastUsedAt: at });
  }
}
