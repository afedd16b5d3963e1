/**
 * `pixvote webhooks add <url> --events LIST [--description TEXT] | list | rm <id> | rotate <id> | deliveries <id> |
 * enable <id> | disable <id>`: the caller's webhook endpoints (API.md "Clients at volume").
 */
import type { ApiClient } from './api.client.ts';
import { CliError } from './cli-config.store.ts';
import type { Output } from './progress.reporter.ts';

export const WEBHOOKS_USAGE_LINE =
  'usage: pixvote webhooks add <url> --events LIST [--description TEXT] | list | rm <id> | rotate <id> | ' +
  'deliveries <id> | enable <id> | disable <id>';

interface WebhookView {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  created_at: string;
}

interface DeliveryView {
  id: string;
  type: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
}

function table(out: Output, rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) out.write(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ') + '\n');
}

export async function runWebhooks(
  client: ApiClient,
  args: string[],
  out: Output,
  opts: { events?: string | undefined; description?: string | undefined } = {},
): Promise<number> {
  const [action, arg, ...rest] = args;
  if (rest.length) throw new CliError(`unexpected arguments: ${rest.join(' ')}`);
  const path = (id: string | undefined, tail = '') => {
    if (!id) throw new CliError(`usage: pixvote webhooks ${action} <id>`);
    return `/api/webhooks/${encodeURIComponent(id)}${tail}`;
  };
  switch (action) {
    case 'add': {
      if (!arg || !opts.events) throw new CliError('usage: pixvote webhooks add <url> --events LIST');
      const events = opts.events
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean);
      const json = { url: arg, events, ...(opts.description !== undefined ? { description: opts.description } : {}) };
      const w = await client.call('POST', '/api/webhooks', { json });
      out.write(
        `added webhook ${w.id} → ${w.url} (${(w.events as string[]).join(',')})\n${w.secret}\n` +
          'The signing secret is shown only now; keep it somewhere safe.\n',
      );
      return 0;
    }
    case 'list': {
      if (arg) throw new CliError('usage: pixvote webhooks list');
      const { webhooks } = (await client.call('GET', '/api/webhooks')) as { webhooks: WebhookView[] };
      if (!webhooks.length) return (out.write('no webhooks\n'), 0);
      table(out, [
        ['ID', 'STATE', 'CREATED', 'EVENTS', 'URL'],
        ...webhooks.map((w) => [
          w.id,
          w.enabled ? 'enabled' : 'disabled',
          w.created_at,
          w.events.join(','),
          w.url + (w.disabled_reason ? ` (${w.disabled_reason})` : ''),
        ]),
      ]);
      return 0;
    }
    case 'rm':
      await client.call('DELETE', path(arg));
      out.write(`deleted webhook ${arg}\n`);
      return 0;
    case 'rotate': {
      const w = await client.call('POST', path(arg, '/rotate-secret'));
      out.write(
        `new secret of webhook ${w.id}:\n${w.secret}\n` +
          `The previous secret keeps signing next to it until ${w.previous_secret_expires_at}.\n`,
      );
      return 0;
    }
    case 'deliveries': {
      const { deliveries } = (await client.call('GET', path(arg, '/deliveries?limit=50'))) as {
        deliveries: DeliveryView[];
      };
      if (!deliveries.length) return (out.write('no deliveries\n'), 0);
      table(out, [
        ['WEBHOOK-ID', 'CREATED', 'STATUS', 'ATTEMPTS', 'LAST', 'EVENT'],
        ...deliveries.map((d) => [
          d.id,
          d.created_at,
          d.status,
          String(d.attempts),
          d.last_status === null ? (d.last_error ?? '-') : String(d.last_status),
          d.type,
        ]),
      ]);
      return 0;
    }
    case 'enable':
    case 'disable': {
      const w = await client.call('PATCH', path(arg), { json: { enabled: action === 'enable' } });
      out.write(`webhook ${w.id} ${w.enabled ? 'enabled' : 'disabled'}\n`);
      return 0;
    }
    default:
      throw new CliError(WEBHOOKS_USAGE_LINE);
  }
}
