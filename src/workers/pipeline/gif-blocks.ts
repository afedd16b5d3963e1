/**
 * A GIF's block structure (GIF89a, sections 17–27), walked without decoding: where its data ends inside a block.
 *
 * libvips reads an animated GIF cut short as the frames that are whole (and the cut one as far as it goes) without an
 * error, so a truncated upload was accepted with frames missing; a still GIF cut short is refused. API.md makes a
 * truncated image `invalid_image`; this is how the decode stage tells. A file that ends between blocks, without the
 * trailer (0x3B), has every frame whole and is accepted (some encoders leave the trailer out); so does one whose blocks
 * are followed by bytes that are no block (decoders stop there as this walk does); bytes after the trailer are ignored.
 */
/** `problem` says where the data ends, e.g. "the GIF ends inside the pixel data of frame 3". */
export type GifBlocks = { ok: true; frames: number } | { ok: false; frames: number; problem: string };

const EXTENSION = 0x21;
const IMAGE = 0x2c;
const TRAILER = 0x3b;

/** The size of a colour table a packed field announces (its top bit set), else 0. */
const colourTable = (packed: number) => (packed & 0x80 ? 3 * 2 ** ((packed & 7) + 1) : 0);

export function gifBlocks(b: Uint8Array): GifBlocks {
  let frames = 0;
  const cut = (where: string): GifBlocks => ({ ok: false, frames, problem: `the GIF ends inside ${where}` });
  /** Skips data sub-blocks (a size byte, that many bytes; a 0 ends them) from `i`; -1 when the data ends first. */
  const subBlocks = (i: number): number => {
    while (i < b.length) {
      const size = b[i]!;
      if (size === 0) return i + 1;
      i += 1 + size;
    }
    return -1;
  };
  if (b.length < 13) return cut('its header');
  let i = 13 + colourTable(b[10]!);
  if (i > b.length) return cut('its global colour table');
  while (i < b.length) {
    const block = b[i]!;
    if (block === TRAILER) return { ok: true, frames };
    if (block === EXTENSION) {
      if (i + 2 > b.length) return cut('an extension');
      const next = subBlocks(i + 2);
      if (next < 0) return cut('an extension');
      i = next;
    } else if (block === IMAGE) {
      const frame = `frame ${frames + 1}`;
      if (i + 10 > b.length) return cut(`the descriptor of ${frame}`);
      const data = i + 10 + colourTable(b[i + 9]!);
      // The LZW code size byte, then the image's sub-blocks.
      if (data + 1 > b.length) return cut(`the colour table of ${frame}`);
      const next = subBlocks(data + 1);
      if (next < 0) return cut(`the pixel data of ${frame}`);
      frames++;
      i = next;
    } else {
      break;
    }
  }
  return { ok: true, frames };
}
