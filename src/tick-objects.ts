/**
 * Node's `process.nextTick` builds each tick as one object literal (`{[async_id_symbol], [trigger_async_id_symbol],
 * [async_context_frame], callback, args}`, internal/process/task_queues), and V8 learns that literal's five property
 * stores from the ticks it sees. Each time a field's representation or type is generalized later (the ids as
 * doubles, a callback of another function kind, an `args` array), the same stores meet one more map; past four they
 * go megamorphic for the rest of the process. Node's HTTP server schedules several ticks per request, so such a
 * process answers every request with more CPU. A gateway started on a populated SQLite database came up that way in
 * 23 of 26 starts (the stores' feedback printed with `%DebugPrint(process.nextTick)`), on an empty one in none of 14;
 * a slow one spent ~7 µs more user CPU per cached feed page (bench/README.md, "The cached feed, process by process").
 *
 * `settleTickObjects()` generalizes the literal's fields once, at start, before the application's own ticks:
 * tick-shaped objects with double ids and every kind of callback and `args`, built with the tick object's own keys
 * (read from a tick through `executionAsyncResource()`) and kept, so that the maps they leave stay alive. The
 * literal's stores then meet one map for the life of the process (5 of 5 such starts). Where a Node version's ticks
 * carry other keys, it does nothing.
 */
import { executionAsyncResource } from 'node:async_hooks';

/** The tick-shaped objects made at start: their maps are the ones every later tick object has. */
const shapes: object[] = [];

export function settleTickObjects(): Promise<void> {
  return new Promise((resolve) => {
    process.nextTick(function settle() {
      const keys = Object.getOwnPropertySymbols(executionAsyncResource());
      if (keys.length === 3) {
        const [id, trigger, frame] = keys as [symbol, symbol, symbol];
        const callbacks = [
          function sloppy() {},
          () => {},
          async () => {},
          function* generator() {},
          class {},
          (() => {}).bind(null),
          Math.max,
        ];
        for (const callback of callbacks)
          for (const args of [undefined, [1]])
            shapes.push({ [id]: 1.5, [trigger]: 2.5, [frame]: undefined, callback, args });
      }
      resolve();
    });
  });
}
