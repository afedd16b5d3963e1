/**
 * HS256 JWTs: `sub` is the user id. Verified with an explicit algorithm list, so `none` or RS/HS confusion cannot pass.
 */
import jwt from 'jsonwebtoken';

export interface JwtIssuer {
  sign(userId: string): { token: string; expiresAt: Date };
  /** The user id of a valid, unexpired token; null otherwise. */
  verify(token: string): string | null;
}

export function createJwtIssuer(opts: { secret: string; ttlSeconds: number; now?: () => number }): JwtIssuer {
  const now = opts.now ?? Date.now;
  return {
    sign(userId) {
      const iat = Math.floor(now() / 1000);
      const exp = iat + opts.ttlSeconds;
      const token = jwt.sign({ sub: userId, iat, exp }, opts.secret, { algorithm: 'HS256' });
      return { token, expiresAt: new Date(exp * 1000) };
    },
    verify(token) {
      try {
        const claims = jwt.verify(token, opts.secret, {
          algorithms: ['HS256'],
          clockTimestamp: Math.floor(now() / 1000),
        });
        if (typeof claims !== 'object' || typeof claims.sub !== 'string' || typeof claims.exp !== 'number') return null;
        return claims.sub;
      } catch {
        return null;
      }
    },
  };
}
