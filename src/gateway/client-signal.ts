import type { AppContext } from './context.ts';

/**
 * Aborts when the client goes away before its response was sent (so queued work can be dropped) —
 * including when it already went while the request body was still being read.
 */
export function clientSignal(ctx: AppContext): AbortSignal {
  const controller = new AbortController();
  const { res } = ctx;
  const socket = ctx.req.socket;
  const gone = () => {
    // A keep-alive socket outlives this request: its listener must go with the response, or a client
    // sending thousands of uploads over one connection piles up listeners (and the contexts they hold).
    socket.off('close', gone);
    if (!res.writableFinished) controller.abort(new Error('client disconnected'));
  };
  // (ctx.req.destroyed says nothing here: a request whose body was read to the end is destroyed too.)
  if (socket.destroyed) gone();
  else {
    res.once('close', gone);
    socket.once('close', gone);
  }
  return controller.signal;
}
