import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AppError } from '../../src/domain/errors.ts';
import { isTagSlug, normalizeTag, normalizeTags, parseTagList, slugOf } from '../../src/domain/tags.ts';

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

/**
 * Property-based (fast-check): names drawn from many scripts (with their combining marks), compatibility forms,
 * case oddities, invisible characters, controls, punctuation, emoji and any Unicode at all, judged against an
 * oracle written from the contract with the grapheme segmenter (Intl.Segmenter), not the code's pattern: a name is
 * taken when, after NFKC folding, trimming, lowercasing and collapsing whitespace, it is 1–32 characters, none
 * invisible, every grapheme a space, `-`, `_`, or a letter or digit with what is written on it. A name taken is
 * taken again the same (what is stored and sent back is one tag), and its slug is a tag's.
 */
describe('tag names fast-check writes, against the contract', () => {
  const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });
  const INVISIBLE = /(?![\t\n\v\f\r])[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
  const oracle = (raw: string): string | null => {
    if (INVISIBLE.test(raw) || INVISIBLE.test(raw.normalize('NFKC'))) return null;
    const name = raw.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, ' ');
    if (!name || [...name].length > 32) return null;
    for (const { segment } of graphemes.segment(name))
      if (!/^[ _-]$/.test(segment) && !/^[\p{L}\p{N}][\p{L}\p{N}\p{M}]*$/u.test(segment)) return null;
    return name;
  };
  const piece = fc.oneof(
    fc.constantFrom('İstanbul', 'हिन्दी', 'தமிழ்', 'עִבְרִית', 'ภาษาไทย', 'العربية', 'Tiếng Việt', '한국어', '日本語'),
    fc.constantFrom('café', 'cafe\u0301', 'ʻōlelo', 'Ǆungla', 'ΟΔΟΣ', 'straẞe', 'ﬁsh', 'Ⅻ', '①', '㍿', 'ＣＡＴＳ'),
    fc.constantFrom('\u0301', '\u093f', '\u094d', '\u05b4', '\u0e31', '\u20dd', '\u0345'),
    fc.constantFrom('\u200b', '\u200c', '\u200d', '\ufeff', '\u00ad', '\u202e', '\u3164', '\u115f', '\u034f'),
    fc.constantFrom(' ', '  ', '\t', '\n', '\u00a0', '\u3000', '-', '_', ',', '!', '.', '/', '#', '\0', '\x7f'),
    fc.constantFrom('cats', 'a', '9', 'x_y', 'new-york', '😀', '👍🏽', '🇫🇷', '\ud800'),
    fc.string({ unit: 'grapheme', maxLength: 4 }),
    fc.string({ unit: 'binary', maxLength: 3 }),
  );
  const name = fc.array(piece, { minLength: 1, maxLength: 5 }).map((p) => p.join(''));
  const taken = (raw: string): string | null => {
    try {
      const [n] = normalizeTags([raw]);
      return n ?? null;
    } catch (e) {
      assert.ok(e instanceof AppError && e.code === 'invalid_tag', `${JSON.stringify(raw)}: ${String(e)}`);
      return null;
    }
  };

  it('a name is taken exactly when the contract says, the same again, with a slug of a tag', () => {
    fc.assert(
      fc.property(name, (raw) => {
        const got = taken(raw);
        assert.equal(got, oracle(raw), JSON.stringify(raw));
        if (got === null) return;
        assert.equal(taken(got), got, `${JSON.stringify(got)} sent again`);
        assert.ok(isTagSlug(slugOf(got)), JSON.stringify(got));
      }),
      { numRuns: 20_000 },
    );
  });

  it('a list field keeps each tag once, at most ten, each one a tag on its own', () => {
    fc.assert(
      fc.property(fc.array(name, { maxLength: 14 }), (names) => {
        let list: string[];
        try {
          list = parseTagList(names.join(','));
        } catch (e) {
          assert.ok(e instanceof AppError && ['invalid_tag', 'too_many_tags'].includes(e.code), String(e));
          return;
        }
        assert.ok(list.length <= 10);
        assert.equal(new Set(list.map(slugOf)).size, list.length, JSON.stringify(list));
        for (const t of list) assert.deepEqual(normalizeTags([t]), [t]);
      }),
      { numRuns: 5_000 },
    );
  });
});
