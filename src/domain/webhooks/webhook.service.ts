/**
 * Webhook endpoints (API.md "Clients at volume"): a user registers endpoints for events on their own uploads, an
 * admin also for the moderation queue's. Each endpoint is its owner's alone: another user's id answers 404.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { errors } from '../errors.ts';
import { hasScope, type Principal } from '../users.ts';
import type { WebhookPatch, WebhookStore } from './ports.ts';
import { newSecret } from './signing.ts';
import {
  isAdminEvent,
  MAX_WEBHOOKS_PER_USER,
  PREVIOUS_SECRET_TTL_MS,
  type DeliveryRecord,
  type WebhookEventType,
  type WebhookRecord,
} from './webhook.types.ts';

/** Why a URL may not receive webhooks (the address rules of `image_url`), or null when it may. */
export type WebhookUrlCheck = (url: string) => string | null;

export interface WebhookServiceDeps {
  store: WebhookStore;
  clock: Clock;
  checkUrl: WebhookUrlCheck;
  /** Kicks the delivery loop (after an endpoint is enabled again). */
  onEnabled?: () => void;
}

export class WebhookService {
  readonly #store: WebhookStore;
  readonly #clock: Clock;
  readonly #checkUrl: WebhookUrlCheck;
  readonly #onEnabled: () => void;

  constructor(deps: WebhookServiceDeps) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#checkUrl = deps.checkUrl;
    this.#onEnabled = deps.onEnabled ?? (() => {});
  }

  async create(
    user: Principal,
    input: { url: string; events: WebhookEventType[]; description?: string | undefined },
  ): Promise<WebhookRecord & { secret: string }> {
    this.#allowed(user, input.url, input.events);
    if ((await this.#store.countOf(user.userId)) >= MAX_WEBHOOKS_PER_USER)
      throw errors.invalid(`webhooks: at most ${MAX_WEBHOOKS_PER_USER} per user; delete one first`);
    const secret = newSecret();
    const record = await this.#store.create({
      id: randomUUID(),
      userId: user.userId,
      url: input.url,
      description: input.description ?? '',
      events: unique(input.events),
      secret,
      tokenId: credentialOf(user),
      at: this.#clock.now(),
    });
    return { ...record, secret };
  }

  list(user: Principal): Promise<WebhookRecord[]> {
    return this.#store.list(user.userId);
  }

  /**
   * The endpoint as it will be must be allowed: one that keeps taking moderation events needs an admin and `moderate`
   * whatever the patch changes (a new URL is a new subscriber), and the credential of the patch becomes its own.
   */
  async update(user: Principal, id: string, patch: WebhookPatch): Promise<WebhookRecord> {
    const events = patch.events ?? (await this.#store.find(user.userId, id))?.events;
    if (!events) throw notFound(id);
    this.#allowed(user, patch.url, events);
    const updated = await this.#store.update(
      user.userId,
      id,
      { ...patch, ...(patch.events ? { events: unique(patch.events) } : {}) },
      this.#clock.now(),
      credentialOf(user),
    );
    if (!updated) throw notFound(id);
    if (patch.enabled) this.#onEnabled();
    return updated;
  }

  async delete(user: Principal, id: string): Promise<void> {
    if (!(await this.#store.delete(user.userId, id))) throw notFound(id);
  }

  async rotateSecret(user: Principal, id: string): Promise<WebhookRecord & { secret: string }> {
    const now = this.#clock.now();
    const secret = newSecret();
    const updated = await this.#store.rotate(
      user.userId,
      id,
      secret,
      new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS),
      now,
    );
    if (!updated) throw notFound(id);
    return { ...updated, secret };
  }

  async deliveries(user: Principal, id: string, offset: number, limit: number): Promise<DeliveryRecord[]> {
    if (!(await this.#store.find(user.userId, id))) throw notFound(id);
    return this.#store.deliveries(id, offset, limit);
  }

  /**
   * The URL's address rules; moderation events only for an admin (403 `forbidden`) whose credential has `moderate`
   * (403 `insufficient_scope`, as the admin routes answer a token without it).
   */
  #allowed(user: Principal, url: string | undefined, events: WebhookEventType[]): void {
    if (url !== undefined) {
      const problem = this.#checkUrl(url);
      if (problem) throw errors.invalid(`url ${problem}`);
    }
    const adminOnly = events.filter(isAdminEvent);
    if (!adminOnly.length) return;
    const these = `${adminOnly.join(', ')} ${adminOnly.length > 1 ? 'are' : 'is'}`;
    if (!user.isAdmin) throw errors.forbidden(`events: ${these} for admins only`);
    if (!hasScope(user, 'moderate')) throw errors.insufficientScope('moderate', `the events ${adminOnly.join(', ')}`);
  }
}

/** The API token a request came with, which an endpoint it configures keeps (null: a JWT or the cookie). */
const credentialOf = (user: Principal): string | null => user.token?.id ?? null;

const unique = (events: WebhookEventType[]): WebhookEventType[] => [...new Set(events)];
const notFound = (id: string) => errors.notFound(`no webhook ${id} of yours`);
