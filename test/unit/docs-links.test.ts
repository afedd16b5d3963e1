/**
 * The front page and the guide hold together: every relative link of README.md and docs/*.md names a file of the
 * checkout (and, with a #fragment into a markdown page, one of its headings), every page of the guide starts with
 * what it is for and is linked from README.md, and README.md stays a front page (≤ 250 lines).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Pages linked before they land (none now). */
const PENDING = new Set<string>();

const guide = readdirSync(join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const pages = ['README.md', ...guide];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');
}

function anchors(page: string): Set<string> {
  const text = readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)));
}

test('every relative link of README.md and docs/*.md reaches a file, and a #fragment a heading of it', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    const text = readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
    const targets = [
      ...[...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!),
      ...[...text.matchAll(/<img src="([^"]+)"/g)].map((m) => m[1]!),
    ];
    for (const target of targets) {
      if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
      checked++;
      const [path, fragment] = target.split('#') as [string, string | undefined];
      const file = path ? normalize(join(dirname(page), path)) : page;
      if (PENDING.has(file)) continue;
      if (!existsSync(join(ROOT, file))) broken.push(`${page}: ${target} (no ${file})`);
      else if (fragment && file.endsWith('.md') && !anchors(file).has(fragment)) {
        broken.push(`${page}: ${target} (no heading #${fragment} in ${file})`);
      }
    }
  }
  assert.ok(checked >= 40, `${checked} links checked`);
  assert.deepEqual(broken, []);
});

test('each page of the guide starts with what it is for, and README.md links to it', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  for (const page of guide) {
    if (PENDING.has(page)) continue;
    const text = readFileSync(join(ROOT, page), 'utf8');
    const firstParagraph = text.split('\n\n')[1] ?? '';
    assert.match(firstParagraph, /^What this page is for: /, `${page} starts with what it is for`);
    assert.ok(readme.includes(`](${page})`), `README.md links to ${page}`);
  }
  assert.ok(guide.length >= 9, `${guide.length} pages`);
});

test('README.md is a front page: at most 250 lines, the two commands first', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const lines = readme.split('\n').length;
  assert.ok(lines <= 250, `README.md has ${lines} lines`);
  const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  assert.match(firstBlock, /^npm install && npm start\b/m);
  assert.match(firstBlock, /^npm install && npm test\b/m);
});
