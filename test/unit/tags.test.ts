import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/domain/errors.ts';
import { isTagSlug, normalizeTag, normalizeTags, parseTagList } from '../../src/domain/tags.ts';

/** The invalid_tag error normalizeTags throws for these names. */
function refusal(names: string[]): AppError {
  try {
    normalizeTags(names);
  } catch (e) {
    assert.ok(e instanceof AppError);
    assert.equal(e.code, 'invalid_tag');
    return e;
  }
  assert.fail(`${JSON.stringify(names)} was accepted`);
}

describe('tag names: NFKC folding', () => {
  it('folds fullwidth and compatibility forms to their plain letters, then lowercases', () => {
    assert.equal(normalizeTag('ＣＡＴＳ'), 'cats');
    assert.equal(normalizeTag('Ｃｕｔｅ\u3000Ｃａｔｓ'), 'cute cats'); // ideographic space too
    assert.equal(normalizeTag('ﬁsh'), 'fish'); // ligature
    assert.equal(normalizeTag('①②'), '12');
    assert.equal(normalizeTag('ℌello'), 'hello'); // letterlike symbol
    assert.equal(normalizeTag('cafe\u0301'), 'café'); // composed
    assert.equal(normalizeTag('a\u00A0\u2003 b'), 'a b'); // no-break and em spaces collapse with the rest
  });

  it('a folded name and its plain twin are one tag', () => {
    assert.deepEqual(normalizeTags(['ＣＡＴＳ', 'cats', ' Cats ']), ['cats']);
    assert.deepEqual(parseTagList('ＤＯＧＳ, dogs,Ｐｅｔｓ'), ['dogs', 'pets']);
  });

  it('suggestion prefixes and slugs fold the same way', () => {
    assert.equal(normalizeTag('ＺＥ'), 'ze');
    assert.ok(isTagSlug('cute-cats'));
    assert.ok(!isTagSlug('ca\u200Bts'));
    assert.ok(!isTagSlug('\u3164'));
  });
});

describe('tag names: invisible characters are refused', () => {
  const cases: Array<[string, string]> = [
    ['ca\u200Bts', 'U+200B'], // zero-width space
    ['ca\u200Cts', 'U+200C'], // zero-width non-joiner
    ['ca\u200Dts', 'U+200D'], // zero-width joiner
    ['\uFEFFcats', 'U+FEFF'], // byte order mark (String.prototype.trim would have eaten it)
    ['cats\uFEFF', 'U+FEFF'],
    ['ca\u202Ets', 'U+202E'], // right-to-left override
    ['ca\u202Ats', 'U+202A'], // left-to-right embedding
    ['ca\u2066ts', 'U+2066'], // isolates
    ['ca\u2069ts', 'U+2069'],
    ['ca\u200Ets', 'U+200E'], // left-to-right mark
    ['ca\u061Cts', 'U+061C'], // Arabic letter mark
    ['ca\u00ADts', 'U+00AD'], // soft hyphen
    ['ca\u2060ts', 'U+2060'], // word joiner
    ['ca\u180Ets', 'U+180E'], // Mongolian vowel separator
    ['cats\uFE0F', 'U+FE0F'], // variation selector
    ['cats\u{E0041}', 'U+E0041'], // tag character
    ['\u3164', 'U+3164'], // Hangul filler: filed as a letter, shows nothing
    ['ab\uFFA0', 'U+FFA0'], // halfwidth Hangul filler (folds to U+1160, also invisible)
    ['ca\u0000ts', 'U+0000'], // controls
    ['ca\u001Bts', 'U+001B'],
    ['ca\u007Fts', 'U+007F'],
    ['ca\u0085ts', 'U+0085'],
  ];
  for (const [name, code] of cases) {
    it(`${code} → invalid_tag naming the tag as sent and the character`, () => {
      const e = refusal(['fine', name]);
      assert.ok(e.message.includes(code), e.message);
      assert.ok(e.message.includes(`tag "${name.replace(/[^a-z]/u, `<${code}>`)}"`), e.message);
    });
  }

  it('in the upload field too, even as an entry of its own', () => {
    assert.throws(() => parseTagList('cats, ca\u200Bts'), { code: 'invalid_tag' });
    assert.throws(() => parseTagList('cats,\u200B'), { code: 'invalid_tag' });
    assert.deepEqual(parseTagList('cats, , dogs,'), ['cats', 'dogs']);
  });

  it('whitespace controls stay whitespace: trimmed and collapsed', () => {
    assert.deepEqual(normalizeTags([' cute\t\ncats\r\n']), ['cute cats']);
  });

  it('every character a tag may hold is still accepted', () => {
    assert.deepEqual(normalizeTags(['ünïcödé', 'Ελληνικά', '日本語', 'snake_case', 'kebab-case', 'r2d2']), [
      'ünïcödé',
      'ελληνικά',
      '日本語',
      'snake_case',
      'kebab-case',
      'r2d2',
    ]);
  });
});
