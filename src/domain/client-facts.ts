/**
 * What the service records of the client at sign-up and at each vote (issue 45, docs/vote-rings.md), already
 * reduced by the gateway to what the vote-ring detector compares: the keyed hash of the client's network (IPv4 /24,
 * IPv6 /48; HMAC-SHA256 with a key derived from the server secret) and its user-agent family. Never a raw address.
 * Null: not known (no parseable address, no user agent).
 */
export interface ClientFacts {
  net: string | null;
  ua: string | null;
}
