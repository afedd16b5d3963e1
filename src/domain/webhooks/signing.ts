/**
 * Standard Webhooks v1 (https://www.standardwebhooks.com): a `whsec_` secret is base64 of the key bytes; the
 * signature is `v1,` + base64 of HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}`. Several signatures
 * (during a secret rotation) are separated by spaces.
 */
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new secret: 24 random bytes (the specification asks for 24 to 64). */
export const newSecret = (): string => PREFIX + randomBytes(24).toString('base64');

const keyOf = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');

/** The `webhook-signature` header's value: one `v1,` signature per secret, separated by spaces. */
export function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return secrets.map((s) => 'v1,' + createHmac('sha256', keyOf(s)).update(content).digest('base64')).join(' ');
}

/** The headers of one delivery attempt. */
export function webhookHeaders(
  secrets: readonly string[],
  id: string,
  at: Date,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
}
