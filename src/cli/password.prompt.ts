/** Reading a password: from the terminal without echo, or the first line of stdin (`--password-stdin`). */
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

/** Prompts on stderr and reads keystrokes in raw mode, so nothing is echoed. Ctrl-C cancels. */
export function promptPassword(prompt: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Promise<string> {
  if (!input.isTTY) return Promise.reject(new CliError('no terminal to ask for the password on: pipe it in with --password-stdin'));
  output.write(prompt);
  return new Promise((resolve, reject) => {
    let password = '';
    const done = () => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      output.write('\n');
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          done();
          return resolve(password);
        }
        if (ch === '\u0003') {
          done();
          return reject(new CliError('cancelled', 130));
        }
        if (ch === '\u007f' || ch === '\b') password = [...password].slice(0, -1).join('');
        else if (ch >= ' ') password += ch;
      }
    };
    input.setEncoding('utf8');
    input.setRawMode(true);
    input.resume();
    input.on('data', onData);
  });
}
