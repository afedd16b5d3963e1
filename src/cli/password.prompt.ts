/**
 * Reading a password: from the terminal without echo (npm's `read`), or the first line of stdin
 * (`--password-stdin`, a plain loop: nothing to hide, and it must not wait for more than one line).
 */
import { read } from 'read';
import { CliError } from './cli-config.store.ts';

export async function readPasswordFromStdin(input: NodeJS.ReadStream = process.stdin): Promise<string> {
  let text = '';
  input.setEncoding('utf8');
  for await (const chunk of input) {
    text += chunk as string;
    if (text.includes('\n')) break;
  }
  const line = text.split(/\r?\n/)[0] ?? '';
  if (!line) throw new CliError('--password-stdin: stdin was empty');
  return line;
}

/** Prompts on stderr and reads the answer without echoing it (npm's `read`, muted). Ctrl-C cancels. */
export async function promptPassword(
  prompt: string,
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WriteStream = process.stderr,
): Promise<string> {
  if (!input.isTTY) throw new CliError('no terminal to ask for the password on: pipe it in with --password-stdin');
  try {
    const password = await read({ prompt, silent: true, replace: '', input, output, terminal: true });
    output.write('\n'); // the Enter was muted with the rest
    return password;
  } catch (e) {
    if ((e as Error).message === 'canceled') throw new CliError('cancelled', 130);
    throw e;
  } finally {
    input.pause();
  }
}
