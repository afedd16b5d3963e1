/**
 * The database's own plan for a statement, for tests that a read is answered from an index (listing-plans.test.ts,
 * blocklist-check.test.ts).
 */
import { CompiledQuery, sql } from 'kysely';
import type { Database } from '../../src/store/database.ts';

/**
 * The plan of `query`; on PostgreSQL with sequential scans (and, unless `sorts`, sorts) priced out, and with
 * `probes` merge and hash joins too (each reads one side whole: a plan that still has one has no index to probe
 * the other side by; at a test's few rows the planner would choose them for their own sake).
 */
export function planOf(db: Database, query: CompiledQuery, sorts = false, probes = false): Promise<string> {
  return db.transaction(async (_em, tx) => {
    const explain = <R>(prefix: string) =>
      tx.executeQuery<R>(CompiledQuery.raw(`${prefix} ${query.sql}`, [...query.parameters]));
    if (db.dialect.name === 'postgres') {
      if (!sorts) await sql`set local enable_sort = off`.execute(tx);
      await sql`set local enable_seqscan = off`.execute(tx);
      if (probes) {
        await sql`set local enable_mergejoin = off`.execute(tx);
        await sql`set local enable_hashjoin = off`.execute(tx);
      }
      const r = await explain<{ 'QUERY PLAN': string }>('explain');
      return r.rows.map((x) => x['QUERY PLAN']).join('\n');
    }
    const r = await explain<{ detail: string }>('explain query plan');
    return r.rows.map((x) => x.detail).join('\n');
  });
}

interface PlanNode {
  'Relation Name'?: string;
  'Plan Rows': number;
  Plans?: PlanNode[];
}

/** PostgreSQL: the rows the planner expects `query` to read from `relation` (its first scan of it), or undefined. */
export async function plannedRows(db: Database, query: CompiledQuery, relation: string): Promise<number | undefined> {
  const r = await db.db().executeQuery<{
    'QUERY PLAN': Array<{ Plan: PlanNode }>;
  }>(CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]));
  const find = (node: PlanNode): PlanNode | undefined =>
    node['Relation Name'] === relation ? node : (node.Plans ?? []).map(find).find(Boolean);
  return find(r.rows[0]!['QUERY PLAN'][0]!.Plan)?.['Plan Rows'];
}
