/**
 * The rate-limiter port: what the gateway asks of a limit. Implemented in src/store/rate-limiter.ts (in
 * memory, through the cluster primary, or in Redis).
 */
import type { Rate } from './durations.ts';

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (≥ 1). */
  resetSeconds: number;
}

export interface Limiter {
  readonly name: string;
  readonly rate: Rate;
  /**
   * Decided at once when the count held here settles it (far from the limit, or over it); else after the store
   * answers.
   */
  consume(key: string): LimitDecision | Promise<LimitDecision>;
}
