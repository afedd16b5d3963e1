/**
 * IPv4 addresses as the WHATWG URL parser reads them in a host, for property tests (fast-check) of what must never
 * reach an internal address: each part in decimal, hex (`0x`, any case) or octal (`0…`), one to four parts, a
 * trailing dot; then characters made full-width (U+FF10…, a dot U+FF0E or U+3002) or percent-encoded, which the
 * parser maps back before it reads the address. Used by the image fetch's and the webhooks' tests.
 */
import fc from 'fast-check';

/** The 32-bit number of a dotted IPv4 address. */
export const ip4 = (s: string) => s.split('.').reduce((n, p) => n * 256 + Number(p), 0);

/** One part of an IPv4 address in the radix drawn. */
const part = (n: number, radix: 8 | 10 | 16, upper: boolean) => {
  if (radix === 10) return String(n);
  if (radix === 8) return `0${n.toString(8)}`;
  const hex = `0x${n.toString(16)}`;
  return upper ? hex.toUpperCase() : hex;
};

/** The IPv4 address `a` (a 32-bit number) written in one, two, three or four parts. */
export const v4Written = (a: number) =>
  fc
    .record({
      parts: fc.constantFrom(1, 2, 3, 4, 4),
      radixes: fc.array(fc.constantFrom<8 | 10 | 16>(10, 10, 8, 16), { minLength: 4, maxLength: 4 }),
      upper: fc.boolean(),
      dot: fc.boolean(),
    })
    .map(({ parts, radixes, upper, dot }) => {
      const b = [a >>> 24, (a >>> 16) & 255, (a >>> 8) & 255, a & 255];
      const nums =
        parts === 4
          ? b
          : parts === 3
            ? [b[0]!, b[1]!, ((b[2]! << 8) | b[3]!) >>> 0]
            : parts === 2
              ? [b[0]!, (a & 0xffffff) >>> 0]
              : [a >>> 0];
      return nums.map((n, i) => part(n, radixes[i]!, upper)).join('.') + (dot ? '.' : '');
    });

/** `host` as it is, or with the characters `picks` says made full-width or percent-encoded. */
export const disguised = (host: string) =>
  fc
    .tuple(fc.constantFrom('wide', 'percent', 'plain'), fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }))
    .map(([how, picks]) =>
      how === 'plain'
        ? host
        : [...host]
            .map((c, i) =>
              !picks[i % picks.length]
                ? c
                : how === 'percent'
                  ? `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`
                  : c === '.'
                    ? (['\uff0e', '\u3002'][i % 2] as string)
                    : /[0-9a-z]/i.test(c)
                      ? String.fromCharCode(c.charCodeAt(0) + 0xfee0)
                      : c,
            )
            .join(''),
    );
