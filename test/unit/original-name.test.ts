import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_ORIGINAL_NAME, originalNameOf } from '../../src/domain/uploads/original-name.ts';

describe("original_name: the client's file name made safe to store and show", () => {
  it('drops bidi controls, so a name cannot display as another extension', () => {
    assert.equal(originalNameOf('cat\u202Egpj.exe'), 'catgpj.exe'); // right-to-left override
    for (const c of [
      '\u202A',
      '\u202B',
      '\u202C',
      '\u202D',
      '\u2066',
      '\u2067',
      '\u2068',
      '\u2069',
      '\u200E',
      '\u200F',
      '\u061C',
    ]) {
      assert.equal(originalNameOf(`a${c}b.png`), 'ab.png', `U+${c.codePointAt(0)!.toString(16)}`);
    }
  });

  it('drops zero-width and other invisible characters', () => {
    for (const c of [
      '\u200B',
      '\u200C',
      '\u200D',
      '\u2060',
      '\uFEFF',
      '\u00AD',
      '\u180E',
      '\uFE0F',
      '\u3164',
      '\u{E0041}',
    ]) {
      assert.equal(originalNameOf(`a${c}b.png`), 'ab.png', `U+${c.codePointAt(0)!.toString(16)}`);
    }
  });

  it('drops control characters (C0, DEL, C1) and line separators', () => {
    assert.equal(originalNameOf('a\u0000b\u0007c\td\ne\rf\u007Fg\u0085h\u009Bi\u2028j\u2029k.png'), 'abcdefghijk.png');
  });

  it('drops lone surrogates', () => {
    assert.equal(originalNameOf('a\uD800b\uDC00c.png'), 'abc.png');
    assert.equal(originalNameOf('\u{1F431}.png'), '\u{1F431}.png'); // a whole pair is a character
  });

  it('is NFC-normalized, also where a dropped character sat between a letter and its accent', () => {
    assert.equal(originalNameOf('cafe\u0301.png'), 'caf\u00E9.png');
    assert.equal(originalNameOf('cafe\u200B\u0301.png'), 'caf\u00E9.png');
  });

  it('keeps only the last path segment (never a path), either separator', () => {
    assert.equal(originalNameOf('../../etc/passwd'), 'passwd');
    assert.equal(originalNameOf('C:\\Users\\ada\\me.png'), 'me.png');
    assert.equal(originalNameOf('dir/'), null);
  });

  it('holds at most 255 characters (code points, not UTF-16 units)', () => {
    const name = originalNameOf(`${'\u{1F431}'.repeat(300)}.png`)!;
    assert.equal([...name].length, MAX_ORIGINAL_NAME);
    assert.equal(name, '\u{1F431}'.repeat(255));
  });

  it('trims; nothing left is no name', () => {
    assert.equal(originalNameOf('  holiday.jpg  '), 'holiday.jpg');
    assert.equal(originalNameOf('\u202E\u200B'), null);
    assert.equal(originalNameOf(''), null);
    assert.equal(originalNameOf(null), null);
  });

  it('a URL path segment is percent-decoded first, then held to the same rules', () => {
    assert.equal(originalNameOf('cat%E2%80%AEgpj.exe', { urlEncoded: true }), 'catgpj.exe');
    assert.equal(originalNameOf('a%2F..%2Fb.png', { urlEncoded: true }), 'b.png');
    assert.equal(originalNameOf('100%.png', { urlEncoded: true }), '100%.png');
  });

  it('applied twice, changes nothing more', () => {
    for (const raw of ['cat\u202Egpj.exe', 'cafe\u0301.png', `${'é'.repeat(300)}`, ' a b ']) {
      const once = originalNameOf(raw);
      assert.equal(originalNameOf(once), once);
    }
  });

  it('names in other scripts are kept as they are', () => {
    for (const name of ['Ελληνικά.jpg', '日本語.png', 'हिन्दी.gif', 'שלום.webp', 'مرحبا.jpg', 'snake_case-1 (2).png']) {
      assert.equal(originalNameOf(name), name);
    }
  });
});
