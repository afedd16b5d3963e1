/** `pixvote tokens create <name> | list | revoke <id>`: the caller's API tokens. */
import type { ApiClient } from './api.client.ts';
import { CliError } from './cli-config.store.ts';
import { scopesOption } from './login.command.ts';
import type { Output } from './progress.reporter.ts';

interface TokenView {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  scopes?: string[];
  expires_at?: string | null;
}

export async function runTokens(
  client: ApiClient,
  args: string[],
  out: Output,
  opts: { scopes?: string | undefined; expiresIn?: string | undefined } = {},
): Promise<number> {
  const [action, arg, ...rest] = args;
  if (rest.length) throw new CliError(`unexpected arguments: ${rest.join(' ')}`);
  if (action === 'create') {
    if (!arg) throw new CliError('usage: pixvote tokens create <name>');
    const scopes = scopesOption(opts.scopes);
    const json = {
      name: arg,
      ...(scopes ? { scopes } : {}),
      ...(opts.expiresIn !== undefined ? { expires_in: opts.expiresIn } : {}),
    };
    const t = await client.call('POST', '/api/auth/tokens/generate', { json });
    const expiry = t.expires_at ? `expires ${t.expires_at}` : 'never expires';
    out.write(
      `created API token "${t.name}" (${t.id}): scopes ${(t.scopes as string[]).join(',')}; ${expiry}\n${t.token}\n` +
        'The secret is shown only now; keep it somewhere safe.\n',
    );
    return 0;
  }
  if (action === 'list') {
    if (arg) throw new CliError('usage: pixvote tokens list');
    const { tokens } = (await client.call('GET', '/api/auth/tokens')) as { tokens: TokenView[] };
    if (!tokens.length) {
      out.write('no API tokens\n');
      return 0;
    }
    const rows = [
      ['ID', 'NAME', 'CREATED', 'LAST USED', 'EXPIRES', 'SCOPES'],
      ...tokens.map((t) => [
        t.id,
        t.name,
        t.created_at,
        t.last_used_at ?? 'never',
        t.expires_at ?? 'never',
        t.scopes?.join(',') ?? '',
      ]),
    ];
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    for (const r of rows) out.write(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ') + '\n');
    return 0;
  }
  if (action === 'revoke') {
    if (!arg) throw new CliError('usage: pixvote tokens revoke <id>');
    await client.call('DELETE', `/api/auth/tokens/${encodeURIComponent(arg)}`);
    out.write(`revoked API token ${arg}\n`);
    return 0;
  }
  throw new CliError(
    'usage: pixvote tokens create <name> [--scopes LIST] [--expires-in DURATION] | list | revoke <id>',
  );
}
