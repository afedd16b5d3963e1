/**
 * `pixvote mod blocklist import --format hma-csv` reads the CSV python-threatexchange writes (`threatexchange
 * dataset -P --csv`: csv.DictWriter, so a header, QUOTE_MINIMAL and CRLF line ends), checked with fast-check against
 * an oracle written from RFC 4180 and that writer, not from the parser: each `pdq` row whose signal is 64 hex digits
 * in any case becomes one entry with the PDQ in lowercase and the row's tags (else its collaboration) as reason, on
 * the line its record starts; fields keep commas, doubled quotes and line breaks (CRLF included) exactly; a broken
 * PDQ (`0x`, 63/65 digits, non-hex, full-width digits, NUL, empty) or a row with more or fewer fields than the header
 * is an error on its line; other signal types are counted; a BOM, LF line ends, extra or reordered columns change
 * nothing; a file without the header is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseBlocklist } from '../../src/cli/blocklist-file.ts';

const COLUMNS = ['collab', 'signal_type', 'signal_str', 'category', 'tags'];
const OTHER_TYPES = ['md5', 'video_md5', 'url', 'raw_text', 'trend_query'];

/** Python's csv writer, QUOTE_MINIMAL: a field holding the delimiter, the quote or a line-end character is quoted. */
const pyField = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

const hex64 = fc
  .array(fc.integer({ min: 0, max: 15 }), { minLength: 64, maxLength: 64 })
  .map((d) => d.map((x) => x.toString(16)).join(''));
const cased = (hex: string) =>
  fc
    .array(fc.boolean(), { minLength: 1, maxLength: 6 })
    .map((up) => [...hex].map((c, i) => (up[i % up.length] ? c.toUpperCase() : c)).join(''));
const brokenPdq = (hex: string) =>
  fc.oneof(
    fc.constant(`0x${hex}`),
    fc.constant(hex.slice(1)),
    fc.constant(`${hex}a`),
    fc.constant(''),
    fc
      .integer({ min: 0, max: 63 })
      .chain((i) =>
        fc
          .constantFrom('g', 'z', '-', '\u0000', String.fromCharCode(hex.charCodeAt(i) + 0xfee0))
          .map((c) => hex.slice(0, i) + c + hex.slice(i + 1)),
      ),
  );

/** Text a collaboration name or a tag list may hold: CSV's special characters included, CRLF and a lone CR too. */
const text = fc
  .array(fc.constantFrom('a', 'B', ' ', ',', '"', '\n', '\r\n', '\r', 'é', '漢', "'", ';', 'x'), { maxLength: 12 })
  .map((parts) => parts.join(''));
/** What the reason is read as: surrounding white space is no part of it (the server trims it too). */
const reasonOf = (tags: string, collab: string) => tags.trim() || collab.trim() || null;

interface Row {
  values: Record<string, string>;
  /** What the oracle expects of the row: an entry, an error, or a count of another signal type. */
  expect: { pdq: string; reason: string | null } | 'error' | { other: string };
  /** A field more (1) or fewer (-1) than the header. */
  ragged: 0 | 1 | -1;
}

const row: fc.Arbitrary<Row> = fc
  .record({
    collab: text,
    tags: text,
    category: fc.constantFrom('POSITIVE_CLASS', 'NEGATIVE_CLASS', 'INVESTIGATION_SEED'),
    extra: text,
    kind: fc.constantFrom('pdq', 'pdq', 'pdq', 'broken', 'other'),
    hex: hex64,
    type: fc.constantFrom(...OTHER_TYPES),
    ragged: fc.constantFrom<0 | 1 | -1>(0, 0, 0, 0, 0, 0, 1, -1),
  })
  .chain((r) =>
    (r.kind === 'pdq' ? cased(r.hex) : r.kind === 'broken' ? brokenPdq(r.hex) : fc.constant(r.hex)).map(
      (signal): Row => ({
        values: {
          collab: r.collab,
          signal_type: r.kind === 'other' ? r.type : 'pdq',
          signal_str: signal,
          category: r.category,
          tags: r.tags,
          note: r.extra,
        },
        ragged: r.ragged,
        expect:
          r.ragged !== 0 || r.kind === 'broken'
            ? 'error'
            : r.kind === 'other'
              ? { other: r.type }
              : { pdq: r.hex, reason: reasonOf(r.tags, r.collab) },
      }),
    ),
  );

const file = fc.record({
  rows: fc.array(row, { maxLength: 12 }),
  // The header's columns in DictWriter's order or another, with a column python-threatexchange does not write.
  order: fc.shuffledSubarray(COLUMNS, { minLength: 5, maxLength: 5 }),
  shuffled: fc.boolean(),
  extraColumn: fc.boolean(),
  bom: fc.boolean(),
  eol: fc.constantFrom('\r\n', '\r\n', '\n'),
  finalEol: fc.boolean(),
});

test('hma-csv: what python-threatexchange writes is read as RFC 4180 and the contract say', () => {
  fc.assert(
    fc.property(file, ({ rows, order, shuffled, extraColumn, bom, eol, finalEol }) => {
      const columns = [...(shuffled ? order : COLUMNS), ...(extraColumn ? ['note'] : [])];
      const records = [
        columns,
        ...rows.map((r) => {
          const fields = columns.map((c) => r.values[c]!);
          return r.ragged === 1 ? [...fields, 'more'] : r.ragged === -1 ? fields.slice(0, -1) : fields;
        }),
      ];
      // Each record's first line, counting CRLF, LF and a lone CR as one line end each (in a quoted field too).
      const lines: number[] = [];
      let line = 1;
      const written = records.map((fields, i) => {
        const out = fields.map(pyField).join(',') + (i < records.length - 1 || finalEol ? eol : '');
        lines.push(line);
        line += out.match(/\r\n|\r|\n/g)?.length ?? 0;
        return out;
      });
      const csv = (bom ? '\uFEFF' : '') + written.join('');

      const parsed = parseBlocklist(csv, 'hma-csv');
      const want = { entries: [] as unknown[], errorLines: [] as number[], others: {} as Record<string, number> };
      rows.forEach((r, i) => {
        const at = lines[i + 1]!;
        if (r.expect === 'error') want.errorLines.push(at);
        else if ('other' in r.expect) want.others[r.expect.other] = (want.others[r.expect.other] ?? 0) + 1;
        else
          want.entries.push({
            line: at,
            entry: { sha256: null, phash: null, pdq: r.expect.pdq, reason: r.expect.reason },
          });
      });
      assert.deepEqual(parsed.entries, want.entries);
      assert.deepEqual(
        parsed.errors.map((e) => e.line),
        want.errorLines,
        JSON.stringify(parsed.errors),
      );
      assert.deepEqual(parsed.otherSignals ?? {}, want.others);
    }),
    { numRuns: 500 },
  );
});

test('hma-csv: a file without its header line is refused, not read as entries', () => {
  fc.assert(
    fc.property(fc.array(hex64, { minLength: 1, maxLength: 5 }), fc.constantFrom('\r\n', '\n'), (hashes, eol) => {
      const csv = hashes.map((h) => `Sample Data,pdq,${h},POSITIVE_CLASS,tag${eol}`).join('');
      const parsed = parseBlocklist(csv, 'hma-csv');
      assert.deepEqual(parsed.entries, []);
      assert.equal(parsed.errors.length, 1);
      assert.equal(parsed.errors[0]!.line, 1);
      assert.match(parsed.errors[0]!.message, /header/);
    }),
    { numRuns: 50 },
  );
});
