/**
 * Every command that reads flags answers `--help` (usage on stdout, exit 0) and refuses an unknown flag with
 * one line on stderr and exit 2: the `pixvote` subcommands, and the npm-script commands under bench/,
 * research/ and scripts/ (`npm run tune-workers -- --help` used to end in parseArgs' stack trace).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pixvote } from '../support/cli.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** `node <script> …args` as its npm script runs it (type stripping), from the checkout. */
function script(file: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--experimental-strip-types', '--disable-warning=ExperimentalWarning', join(root, file), ...args],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const oneLine = (s: string) => s.endsWith('\n') && !s.slice(0, -1).includes('\n');

test(
  'every pixvote command answers --help with its usage and exit 0, ' + 'and an unknown flag with one line and exit 2',
  async () => {
    const home = await mkdtemp(join(tmpdir(), 'pixvote-cli-home-'));
    try {
      for (const command of [[], ['upload'], ['login'], ['logout'], ['tokens'], ['admin'], ['mod']]) {
        const help = await pixvote([...command, '--help'], { home });
        assert.equal(help.code, 0, `pixvote ${command.join(' ')} --help: ${help.stderr}`);
        assert.match(help.stdout, new RegExp(`^usage: pixvote ${command[0] ?? '<command>'}`));
        assert.equal(help.stderr, '');
        if (!command.length) continue;
        const bad = await pixvote([...command, '--frobnicate'], { home });
        assert.equal(bad.code, 2, `pixvote ${command[0]} --frobnicate`);
        assert.ok(oneLine(bad.stderr), bad.stderr);
        assert.match(
          bad.stderr,
          new RegExp(
            `^pixvote: ${command[0]}: unknown option '--frobnicate' \\(see \`pixvote ${command[0]} --help\`\\)`,
          ),
        );
      }
      const typo = await pixvote(['uplaod', 'x'], { home });
      assert.equal(typo.code, 2);
      assert.ok(oneLine(typo.stderr), typo.stderr);
      // The operator scripts run as pixvote commands too, with their own --help and flag checks.
      const tune = await pixvote(['tune-workers', '--help'], { home });
      assert.equal(tune.code, 0, tune.stderr);
      assert.match(tune.stdout, /^usage: npm run tune-workers -- /m);
      const tuneBad = await pixvote(['tune-workers', '--frobnicate'], { home });
      assert.equal(tuneBad.code, 2);
      assert.ok(oneLine(tuneBad.stderr), tuneBad.stderr);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  },
);

const scripts = [
  'bench/ci.ts',
  'bench/screenshots.ts',
  'bench/tune-workers.ts',
  'bench/run-all.ts',
  'bench/pipeline.bench.ts',
  'bench/http-uploads.bench.ts',
  'bench/feeds.bench.ts',
  'bench/feed-processes.bench.ts',
  'bench/gateway.bench.ts',
  'bench/lookup.bench.ts',
  'bench/login-burst.bench.ts',
  'bench/probes.bench.ts',
  'bench/load.bench.ts',
  'research/calibrate-detector.ts',
  'bench/to-markdown.ts',
  'scripts/fetch-models.ts',
];

test(
  'the bench and scripts commands answer --help with exit 0 ' + 'and refuse an unknown flag in one line with exit 2',
  async () => {
    // Two scripts at a time: each run is mostly loading its modules.
    const check = async (file: string) => {
      const help = await script(file, ['--help']);
      assert.equal(help.code, 0, `${file} --help: ${help.stderr}`);
      assert.match(help.stdout, /^usage: /, file);
      const bad = await script(file, ['--frobnicate']);
      assert.equal(bad.code, 2, `${file} --frobnicate: ${bad.stdout}${bad.stderr}`);
      assert.ok(oneLine(bad.stderr), `${file}: ${bad.stderr}`);
      assert.match(bad.stderr, /Unknown option '--frobnicate' \(see .*--help\)/, file);
    };
    const queue = [...scripts];
    const lane = async () => {
      for (let file = queue.shift(); file; file = queue.shift()) await check(file);
    };
    await Promise.all([lane(), lane()]);
    const tune = await script('bench/tune-workers.ts', ['--help']);
    assert.match(tune.stdout, /^usage: npm run tune-workers -- \[--max MAX \(default \d+\)\] .*\[--help\]$/m);
  },
);

test('tune-workers --help explains what it does and every option with its meaning and default', async () => {
  const help = await script('bench/tune-workers.ts', ['--help']);
  assert.equal(help.code, 0, help.stderr);
  assert.equal(help.stderr, '');
  assert.match(help.stdout, /Which WORKERS suits this machine/);
  assert.match(help.stdout, /recommends the smallest count within 5 % of the best throughput/);
  const entry = (flag: string) => help.stdout.split('\n').find((l) => l.trimStart().startsWith(flag)) ?? '';
  // Each option on its own line: the flag, what it means, its default.
  assert.match(entry('--max MAX'), /the largest WORKERS tried.*\(default 2 × cores: \d+\)$/);
  assert.match(entry('--rounds ROUNDS'), /measured rounds.*\(default 3\)$/);
  assert.match(entry('--clients CLIENTS'), /concurrent uploads to each server \(default 4 × cores: \d+\)$/);
  assert.match(entry('--images IMAGES'), /images per round.*\(default 20\)$/);
  assert.match(entry('--markdown'), /Markdown/);
  assert.match(entry('-h, --help'), /this help/);
  assert.match(help.stdout, /Exit 0: done; 1: .*; 2: a bad option/);

  for (const args of [
    ['--max', 'abc'],
    ['--images', '2'],
    ['--rounds', '0'],
  ]) {
    const bad = await script('bench/tune-workers.ts', args);
    assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stdout}${bad.stderr}`);
    assert.ok(oneLine(bad.stderr), bad.stderr);
    assert.match(
      bad.stderr,
      new RegExp(`^npm run tune-workers: ${args[0]} must be a whole number from \\d+ \\(got "${args[1]}"\\)`),
    );
    assert.equal(bad.stdout, '', 'nothing started');
  }
});
