/**
 * What the vote-ring detector may know besides the votes (issue 45): facts the service already sees, kept for a
 * limited time. Networks are never stored raw: an IPv4 address is cut to its /24 and an IPv6 address to its /48,
 * then keyed-hashed with a server secret (HMAC), so equal networks compare equal and nothing names an address.
 * The detector stays a pure function of votes (RingVote, which carries `net` and `ua` per vote) plus these
 * per-account facts, so it runs offline on a generated population exactly as it runs on the database.
 */
export interface AccountFacts {
  /** When the account was created (ms since epoch). */
  createdAt: number;
  /** The keyed hash of the network the account signed up from (null: unknown or past retention). */
  signupNet: string | null;
  /** The user-agent family at sign-up ('firefox', 'chrome', 'safari', 'curl', 'python', 'other'…; null: unknown). */
  signupUa: string | null;
  /** The account's uploads (all time). */
  uploads: number;
  /** Reports the account filed (all time). */
  reports: number;
  /** Votes the account cast (all time, beyond the detector's window). */
  votes: number;
}
