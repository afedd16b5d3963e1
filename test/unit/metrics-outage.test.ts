/**
 * /metrics never depends on the database (API.md Operations; issue 44): the scrape's database figures are read
 * within DATABASE_READ_MS, and a database that refuses or never answers shows as
 * `pixvote_dependency_up{dependency="database"} 0` with the last figures kept, instead of failing the scrape.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createMetrics, type ModerationGauges } from '../../src/metrics.ts';

function line(text: string, series: string): string | undefined {
  return text.split('\n').find((l) => l.startsWith(`${series} `));
}

/** A database whose behaviour the test switches: answering, refusing, or hanging. */
function database() {
  const state = { mode: 'up' as 'up' | 'refused' | 'hanging', depth: 3 };
  const read = (v: () => number) => (): Promise<number> =>
    state.mode === 'up'
      ? Promise.resolve(v())
      : state.mode === 'refused'
        ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'))
        : new Promise<number>(() => {});
  const gauges: ModerationGauges = { queueDepth: read(() => state.depth), blocklistSize: read(() => 7) };
  return { state, gauges };
}

const scrapeAfterReadingExpires = async (registry: { metrics(): Promise<string> }) => {
  // Each scrape reads the database afresh once the last reading is older than DATABASE_READ_MS.
  await new Promise((r) => setTimeout(r, 600));
  return registry.metrics();
};

for (const mode of ['refused', 'hanging'] as const) {
  test(`a ${mode} database: the scrape answers, database up 0, the last figures kept; back: up 1`, async () => {
    const db = database();
    let redis = true;
    const m = createMetrics({ moderation: db.gauges, redisUp: () => redis });
    const first = await m.registry.metrics();
    assert.equal(
      line(first, 'pixvote_dependency_up{dependency="database"}'),
      'pixvote_dependency_up{dependency="database"} 1',
    );
    assert.equal(line(first, 'pixvote_moderation_queue_depth'), 'pixvote_moderation_queue_depth 3');

    db.state.mode = mode;
    db.state.depth = 99;
    redis = false;
    const down = await scrapeAfterReadingExpires(m.registry);
    assert.equal(
      line(down, 'pixvote_dependency_up{dependency="database"}'),
      'pixvote_dependency_up{dependency="database"} 0',
    );
    assert.equal(
      line(down, 'pixvote_dependency_up{dependency="redis"}'),
      'pixvote_dependency_up{dependency="redis"} 0',
    );
    assert.equal(line(down, 'pixvote_moderation_queue_depth'), 'pixvote_moderation_queue_depth 3', 'last figure kept');
    assert.equal(line(down, 'pixvote_blocklist_entries'), 'pixvote_blocklist_entries 7');

    db.state.mode = 'up';
    const back = await scrapeAfterReadingExpires(m.registry);
    assert.equal(
      line(back, 'pixvote_dependency_up{dependency="database"}'),
      'pixvote_dependency_up{dependency="database"} 1',
    );
    assert.equal(line(back, 'pixvote_moderation_queue_depth'), 'pixvote_moderation_queue_depth 99');
  });
}

test('no Redis configured: no redis series (nothing to be down)', async () => {
  const m = createMetrics({ moderation: database().gauges });
  assert.equal(line(await m.registry.metrics(), 'pixvote_dependency_up{dependency="redis"}'), undefined);
});
