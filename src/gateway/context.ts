import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { Principal } from '../domain/users.ts';
import type { AppError, ErrorCode } from '../domain/errors.ts';

/** What the middleware chain leaves on ctx.state for the routes. */
export interface AppState {
  requestId: string;
  /** The process logger; put `reqId: ctx.state.requestId` in what you log. */
  log: Logger;
  /** The authenticated caller, or null (anonymous, or a credential that did not verify). */
  principal: Principal | null;
  /** Why a presented credential was refused; thrown by requireUser(). */
  authError: AppError | null;
  /** Set once an upload request reaches its use case, which counts its outcome itself. */
  uploadOutcomeCounted?: boolean;
  /** Set when the request was refused for its declared body size: its body is never read, not even to discard it. */
  bodyRefusedUnread?: boolean;
  /** The error code the response carries, once the error mapper wrote it (for the access log). */
  errorCode?: ErrorCode;
}

export type AppContext = ParameterizedContext<AppState>;
