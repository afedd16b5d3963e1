/**
 * A node:test reporter for scripts/test.ts: one line per test as it starts (is dequeued, right before it runs) and
 * as it ends ("start"/"pass"/"fail", its nesting and name), written to a file beside the spec reporter's stdout.
 * The spec reporter prints a test only when it ends, so a file stopped at the runner's limit would not say which
 * test was still running; this does.
 */
export default async function* progress(source) {
  for await (const event of source) {
    const line = progressLine(event);
    if (line) yield line;
  }
}

/** The progress line of one test event, or null (scripts/test-batch.mjs writes them as its files run). */
export function progressLine(event) {
  const kind = { 'test:dequeue': 'start', 'test:pass': 'pass', 'test:fail': 'fail' }[event.type];
  if (!kind || !event.data?.name) return null;
  return `${new Date().toISOString()} ${kind} ${event.data.nesting} ${JSON.stringify(event.data.name)}\n`;
}
