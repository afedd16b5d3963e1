/**
 * `pixvote mod …`: the moderators' commands over the admin API (API.md, Moderation). The queue, a decision on an
 * upload, bans, the blocklist files (blocklist.command.ts), the durable jobs and the modlog.
 */
import { ApiError, type ApiClient } from './api.client.ts';
import { CliError } from './cli-config.store.ts';
import { runExport, runImport } from './blocklist.command.ts';
import { MOD_USAGE, UUID, type ModRequest } from './mod-args.ts';
import {
  renderJobs,
  renderModlog,
  renderQueue,
  type ModJob,
  type ModlogEntry,
  type QueueItem,
  type VoteRingQueueItem,
} from './mod-tables.ts';
import type { Output } from './progress.reporter.ts';

export interface ModContext {
  url: string;
  /** The saved login's username, when the credential is the saved login. */
  username?: string | undefined;
  now?: () => number;
}

interface Page {
  page: number;
  has_more: boolean;
}

const query = (params: Record<string, string | number | null>) =>
  Object.entries(params)
    .filter(([, v]) => v !== null)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&');

/** A username (any case) or a user id, as the server knows it. */
async function resolveUser(client: ApiClient, user: string): Promise<{ id: string; username: string }> {
  if (UUID.test(user)) return { id: user.toLowerCase(), username: user };
  if (!/^[A-Za-z0-9_]{3,32}$/.test(user)) throw new CliError(`no user "${user}"`, 1);
  const wanted = user.toLowerCase();
  for (let page = 1; page <= 1000; page++) {
    const r = (await client.call('GET', `/api/admin/users?${query({ q: user, page, limit: 50 })}`)) as Page & {
      users: Array<{ id: string; username: string }>;
    };
    const hit = r.users.find((u) => u.username.toLowerCase() === wanted);
    if (hit) return { id: hit.id, username: hit.username };
    if (!r.has_more || !r.users.length) break;
  }
  throw new CliError(`no user "${user}"`, 1);
}

function morePages(p: Page, command: string): string {
  return p.has_more ? `more: pixvote mod ${command} --page ${p.page + 1}\n` : '';
}

async function run(client: ApiClient, req: ModRequest, out: Output, ctx: ModContext): Promise<number> {
  const now = ctx.now ?? Date.now;
  switch (req.kind) {
    case 'help':
      out.write(MOD_USAGE);
      return 0;
    case 'queue': {
      const path = `/api/admin/moderation?${query({ status: req.status, page: req.page, limit: req.limit })}`;
      const r = (await client.call('GET', path)) as Page & { items: Array<QueueItem | VoteRingQueueItem> };
      if (req.json) return (out.write(`${JSON.stringify(r, null, 2)}\n`), 0);
      if (!r.items.length) out.write(`no ${req.status} items${req.page > 1 ? ` on page ${req.page}` : ''}\n`);
      else out.write(renderQueue(r.items, now()));
      out.write(morePages(r, `queue${req.status === 'closed' ? ' --status closed' : ''}`));
      return 0;
    }
    case 'decide': {
      const body = { action: req.action, reason: req.reason, block: req.block };
      const u = (await client.call('POST', `/api/admin/uploads/${req.id}/moderation`, { json: body })) as {
        moderation?: string;
      };
      const blocked = {
        none: '',
        exact: '; its SHA-256 is blocklisted',
        near: '; its SHA-256, perceptual hash and PDQ (when of quality 50 or more) are blocklisted',
      };
      out.write(`upload ${req.id} is ${u.moderation ?? req.action}${blocked[req.block]}\n`);
      return 0;
    }
    case 'ring': {
      const body = { action: req.action, reason: req.reason };
      const r = (await client.call('POST', `/api/admin/vote-rings/${req.id}`, { json: body })) as {
        voided_votes?: number | null;
        restored_votes?: number | null;
        skipped_votes?: number | null;
        accounts?: unknown[];
      };
      const accounts = r.accounts?.length ?? 0;
      out.write(
        req.action === 'void'
          ? `vote ring ${req.id} voided: ${r.voided_votes ?? 0} votes of ${accounts} accounts removed\n`
          : req.action === 'restore'
            ? `vote ring ${req.id} restored: ${r.restored_votes ?? 0} votes back, ${r.skipped_votes ?? 0} skipped ` +
              '(voted again since, or the upload is gone)\n'
            : `vote ring ${req.id} dismissed\n`,
      );
      return 0;
    }
    case 'ban': {
      const user = await resolveUser(client, req.user);
      const body = { reason: req.reason, until: req.until, remove_uploads: req.removeUploads };
      const r = (await client.call('POST', `/api/admin/users/${user.id}/ban`, { json: body })) as {
        user?: { username?: string };
        banned_until?: string | null;
      };
      const until = r.banned_until ?? req.until;
      const when = !until || until === 'permanent' ? 'permanently' : `until ${until}`;
      // A durable job removes them after the answer (GET /api/admin/jobs shows its progress).
      const removed = req.removeUploads ? '; their uploads are being removed (a background job)' : '';
      out.write(`banned ${r.user?.username ?? user.username} ${when}${removed}\n`);
      return 0;
    }
    case 'unban': {
      const user = await resolveUser(client, req.user);
      await client.call('DELETE', `/api/admin/users/${user.id}/ban`);
      out.write(`unbanned ${user.username}\n`);
      return 0;
    }
    case 'import':
      return runImport(client, req, out);
    case 'export':
      return runExport(client, req, out);
    case 'modlog': {
      const r = (await client.call('GET', `/api/modlog?${query({ page: req.page, limit: req.limit })}`)) as Page & {
        entries: ModlogEntry[];
      };
      if (req.json) return (out.write(`${JSON.stringify(r, null, 2)}\n`), 0);
      out.write(r.entries.length ? renderModlog(r.entries) : 'no entries\n');
      out.write(morePages(r, 'modlog'));
      return 0;
    }
    case 'jobs': {
      const path = `/api/admin/jobs?${query({ status: req.status, page: req.page, limit: req.limit })}`;
      const r = (await client.call('GET', path)) as Page & { jobs: ModJob[] };
      if (req.json) return (out.write(`${JSON.stringify(r, null, 2)}\n`), 0);
      out.write(r.jobs.length ? renderJobs(r.jobs, now()) : `no ${req.status ?? ''}${req.status ? ' ' : ''}jobs\n`);
      out.write(morePages(r, `jobs${req.status ? ` --status ${req.status}` : ''}`));
      return 0;
    }
  }
}

/**
 * Runs one request; a 401, a 403 `forbidden` or `insufficient_scope` becomes a sentence about the login used (exit 1).
 */
export async function runMod(client: ApiClient, req: ModRequest, out: Output, ctx: ModContext): Promise<number> {
  try {
    return await run(client, req, out, ctx);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    if (e.status === 401)
      throw new CliError(
        `not logged in to ${ctx.url}: the server refused the credentials (${e.message}); ` +
          `log in as an admin with \`pixvote login --url ${ctx.url} …\` or pass --token`,
        1,
      );
    if (e.status === 403 && e.code === 'forbidden')
      throw new CliError(
        `${ctx.username ? `the saved login (${ctx.username})` : 'the token given'} is not an admin on ${ctx.url}: ` +
          `moderation needs an admin (${e.message})`,
        1,
      );
    if (e.status === 403 && e.code === 'insufficient_scope')
      throw new CliError(
        `${ctx.username ? `the saved login's token (${ctx.username})` : 'the token given'} may not moderate on ` +
          `${ctx.url} (${e.message}); log in again with \`pixvote login\` (an admin's token gets moderate) ` +
          'or pass a --token with the scope moderate',
        1,
      );
    throw e;
  }
}
