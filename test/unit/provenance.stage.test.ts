/**
 * The provenance stage on real files made in the test: XMP with each IPTC term in every format and form, C2PA
 * manifests signed by the C2PA library with the test certificate (a generated, a captured, a tampered one), plain
 * images; and the scan against hostile bytes (fast-check).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { deflateSync, crc32 } from 'node:zlib';
import fc from 'fast-check';
import { GENERATED_SOURCE_TYPES, IPTC_SOURCE_TYPES } from '../../src/domain/uploads/provenance.ts';
import type { ImageFormat } from '../../src/domain/image-format.ts';
import { readProvenance } from '../../src/workers/pipeline/provenance.stage.ts';
import { scanMarkers, digitalSourceType, MAX_XMP_BYTES } from '../../src/workers/pipeline/provenance-scan.ts';
import {
  libraryC2paReader,
  summaryFromStore,
  type C2paLibrary,
  type C2paReader,
} from '../../src/workers/pipeline/c2pa-reader.ts';
import * as pf from '../support/provenance-fixtures.ts';

const FORMATS: readonly ImageFormat[] = ['jpeg', 'png', 'webp', 'gif'];
const NO_MARKER = { ai_generated: null, source_type: null, c2pa: null };
const countingReader = (): C2paReader & { calls: number } => {
  const r = {
    calls: 0,
    read: () => {
      r.calls++;
      return Promise.resolve({ present: true, valid: null, generator: null, signer: null, actions: [] });
    },
  };
  return r;
};

describe('provenance stage: XMP DigitalSourceType', () => {
  it('reads each IPTC term from the XMP of every format; generated only for the three generated terms', async () => {
    for (const format of FORMATS) {
      for (const term of IPTC_SOURCE_TYPES) {
        const p = await readProvenance(await pf.imageWithXmpSourceType(format, term), format, null);
        assert.deepEqual(
          p,
          { ai_generated: GENERATED_SOURCE_TYPES.has(term), source_type: term, c2pa: null },
          `${format} ${term}`,
        );
      }
    }
  });

  it('reads the attribute, element and rdf:resource forms, under any prefix bound to the namespace', async () => {
    for (const format of FORMATS)
      for (const form of ['attribute', 'element', 'resource'] as const)
        for (const prefix of ['Iptc4xmpExt', 'ns1', 'x-y.z_'])
          for (const bare of [false, true]) {
            const bytes = await pf.imageWithXmpSourceType(format, 'compositeWithTrainedAlgorithmicMedia', {
              form,
              prefix,
              bare,
            });
            assert.equal(
              scanMarkers(bytes, format).xmpSourceType,
              'compositeWithTrainedAlgorithmicMedia',
              `${format} ${form} ${prefix}`,
            );
          }
  });

  it('is no marker for a term outside the vocabulary, an unbound prefix, or another namespace', async () => {
    assert.equal(scanMarkers(await pf.jpegWithXmpSourceType('madeUpTerm'), 'jpeg').xmpSourceType, null);
    const unbound = pf.xmpPacket('trainedAlgorithmicMedia').replace(/xmlns:Iptc4xmpExt="[^"]*"/, '');
    assert.equal(digitalSourceType(Buffer.from(unbound)), null);
    const other = pf.xmpPacket('trainedAlgorithmicMedia').replace('Iptc4xmpExt/2008-02-29/', 'Iptc4xmpExt/2099/');
    assert.equal(digitalSourceType(Buffer.from(other)), null);
  });

  it('reads entities, character references, CDATA and single quotes as XML does', () => {
    const ns = 'xmlns:e="http://iptc.org/std/Iptc4xmpExt/2008-02-29/"';
    const cases = [
      `<d ${ns} e:DigitalSourceType='http://cv.iptc.org/newscodes/digitalsourcetype/&#x74;rainedAlgorithmicMedia'/>`,
      `<d ${ns}><e:DigitalSourceType><![CDATA[http://cv.iptc.org/newscodes/digitalsourcetype/algorithmicMedia]]></e:DigitalSourceType></d>`,
      `<d ${ns}><e:DigitalSourceType>\n  trainedAlgorithmicMedia\n</e:DigitalSourceType></d>`,
      `<d xmlns:e = 'http://iptc.org/std/Iptc4xmpExt/2008-02-29/' e:DigitalSourceType = "algorithmicMedia"/>`,
    ];
    for (const xmp of cases) assert.ok(digitalSourceType(Buffer.from(xmp)), xmp);
  });

  it('reads the extended XMP of a JPEG, reassembled from chunks in any order', async () => {
    const jpeg = await pf.plainImage('jpeg');
    const main = Buffer.from(pf.xmpPacket('digitalArt').replace('digitalArt', 'nothing'));
    const ext = Buffer.from(pf.xmpPacket('trainedAlgorithmicMedia'));
    const guid = 'A'.repeat(32);
    const half = Math.floor(ext.length / 2);
    const chunk = (offset: number, data: Buffer) => {
      const head = Buffer.alloc(8);
      head.writeUInt32BE(ext.length, 0);
      head.writeUInt32BE(offset, 4);
      return app1('http://ns.adobe.com/xmp/extension/\0', Buffer.concat([Buffer.from(guid), head, data]));
    };
    const bytes = Buffer.concat([
      jpeg.subarray(0, 2),
      app1('http://ns.adobe.com/xap/1.0/\0', main),
      chunk(half, ext.subarray(half)),
      chunk(0, ext.subarray(0, half)),
      jpeg.subarray(2),
    ]);
    assert.equal(scanMarkers(bytes, 'jpeg').xmpSourceType, 'trainedAlgorithmicMedia');
  });

  it('reads PNG XMP from compressed iTXt and zTXt chunks too', async () => {
    const png = await pf.plainImage('png');
    const xmp = Buffer.from(pf.xmpPacket('algorithmicMedia'));
    const key = Buffer.from('XML:com.adobe.xmp\0', 'latin1');
    const iTXt = Buffer.concat([key, Buffer.from([1, 0, 0, 0]), deflateSync(xmp)]);
    const zTXt = Buffer.concat([key, Buffer.from([0]), deflateSync(xmp)]);
    for (const [type, data] of [
      ['iTXt', iTXt],
      ['zTXt', zTXt],
    ] as const) {
      const bytes = Buffer.concat([png.subarray(0, 33), pngChunk(type, data), png.subarray(33)]);
      assert.equal(scanMarkers(bytes, 'png').xmpSourceType, 'algorithmicMedia', type);
    }
  });

  it('gives no marker for plain images of every format, and never asks the C2PA reader about them', async () => {
    const reader = countingReader();
    for (const format of FORMATS) {
      assert.deepEqual(await readProvenance(await pf.plainImage(format), format, reader), NO_MARKER, format);
      assert.deepEqual(await readProvenance(await pf.jpegWithXmpSourceType('digitalCapture'), 'jpeg', reader), {
        ai_generated: false,
        source_type: 'digitalCapture',
        c2pa: null,
      });
    }
    assert.equal(reader.calls, 0);
  });
});

describe('provenance stage: C2PA', async () => {
  const lib = await pf.c2paLibrary();
  const skip = lib ? false : '@contentauth/c2pa-node is not installed (optional dependency)';

  it('validates a signed image of every format: generator, signer, actions, AI source type', { skip }, async () => {
    const reader = libraryC2paReader();
    for (const format of FORMATS) {
      const bytes = await pf.c2paSignedImage(format, { sourceType: 'trainedAlgorithmicMedia' });
      assert.equal(scanMarkers(bytes, format).c2pa, true, format);
      assert.deepEqual(
        await readProvenance(bytes, format, reader),
        {
          ai_generated: true,
          source_type: 'trainedAlgorithmicMedia',
          c2pa: {
            present: true,
            valid: true,
            generator: 'pixvote-tests/1.0',
            signer: pf.TEST_SIGNER,
            actions: [
              {
                action: 'c2pa.created',
                digital_source_type: 'trainedAlgorithmicMedia',
                software_agent: null,
                when: null,
              },
            ],
            trusted: null,
          },
        },
        format,
      );
    }
  });

  it(
    "says a captured image is not generated, and a tampered one invalid with the validator's code",
    { skip },
    async () => {
      const reader = libraryC2paReader();
      const captured = await readProvenance(await pf.c2paSignedJpeg({ sourceType: 'digitalCapture' }), 'jpeg', reader);
      assert.equal(captured.ai_generated, false);
      assert.equal(captured.c2pa?.valid, true);
      const tampered = await readProvenance(await pf.tamperedC2paJpeg(), 'jpeg', reader);
      assert.equal(tampered.c2pa?.valid, false);
      assert.deepEqual(tampered.c2pa?.validation_errors, ['assertion.dataHash.mismatch']);
      assert.equal(tampered.ai_generated, null, 'an invalid manifest saying "captured" is no marker');
      const aiTampered = Buffer.from(await pf.c2paSignedJpeg({ sourceType: 'trainedAlgorithmicMedia' }));
      aiTampered.write('pixvote fixture: tampered', aiTampered.indexOf('pixvote fixture: original'), 'latin1');
      assert.equal((await readProvenance(aiTampered, 'jpeg', reader)).ai_generated, true, 'an admission counts anyway');
    },
  );

  it(
    'with trust anchors, says whether the signer chains to one; an untrusted signer stays valid',
    { skip },
    async () => {
      const signed = await pf.c2paSignedJpeg({ sourceType: 'digitalCapture' });
      const anchored = libraryC2paReader({ trustAnchors: readFileSync(pf.TEST_TRUST_ANCHORS, 'utf8') });
      assert.deepEqual(
        [
          (await readProvenance(signed, 'jpeg', anchored)).c2pa?.valid,
          (await readProvenance(signed, 'jpeg', anchored)).c2pa?.trusted,
        ],
        [true, true],
      );
      // Another root: the test signer does not chain to it.
      const otherRoot = readFileSync(new URL('../fixtures/c2pa/other-root.pub', import.meta.url), 'utf8');
      const other = await readProvenance(signed, 'jpeg', libraryC2paReader({ trustAnchors: otherRoot }));
      assert.equal(other.c2pa?.valid, true);
      assert.equal(other.c2pa?.trusted, false);
    },
  );

  it('reports "present, not verified" without a reader, or when the library does not load (said once)', async () => {
    const bytes = lib
      ? await pf.c2paSignedJpeg({ sourceType: 'trainedAlgorithmicMedia' })
      : fakeC2paJpeg(await pf.plainImage('jpeg'));
    const notVerified = { present: true, valid: null, generator: null, signer: null, actions: [] };
    assert.deepEqual(await readProvenance(bytes, 'jpeg', null), {
      ai_generated: null,
      source_type: null,
      c2pa: notVerified,
    });
    const unavailable: Error[] = [];
    const failing = libraryC2paReader({
      load: () => Promise.reject(new Error('no such package')),
      onUnavailable: (e) => unavailable.push(e),
    });
    for (let i = 0; i < 3; i++) assert.deepEqual((await readProvenance(bytes, 'jpeg', failing)).c2pa, notVerified);
    assert.deepEqual(
      unavailable.map((e) => e.message),
      ['no such package'],
    );
    // A library that throws on a manifest, or finds none where the scan saw one: that image is not verified.
    const throwing = libraryC2paReader({
      load: () => Promise.resolve(library(() => Promise.reject(new Error('bad jumbf')))),
    });
    assert.deepEqual((await readProvenance(bytes, 'jpeg', throwing)).c2pa, notVerified);
    const none = libraryC2paReader({ load: () => Promise.resolve(library(() => Promise.resolve(null))) });
    assert.deepEqual((await readProvenance(bytes, 'jpeg', none)).c2pa, notVerified);
  });

  it('maps claims v1 and v2: claim_generator, softwareAgent as text or object, numbered actions assertions', () => {
    const s = summaryFromStore(
      {
        active_manifest: 'm',
        manifests: {
          m: {
            claim_generator: 'Make/2.0 c2pa-rs/0.1',
            signature_info: { common_name: 'Cam\u0000 Co' },
            assertions: [
              {
                label: 'c2pa.actions',
                data: {
                  actions: [{ action: 'c2pa.created', softwareAgent: 'Cam 1', digitalSourceType: 'digitalCapture' }],
                },
              },
              {
                label: 'c2pa.actions__1',
                data: {
                  actions: [{ action: 'c2pa.edited', softwareAgent: { name: 'Ed' }, when: '2026-01-01T00:00:00Z' }],
                },
              },
              { label: 'stds.schema-org.CreativeWork', data: { actions: [{ action: 'ignored' }] } },
            ],
          },
        },
        validation_status: [{ code: 'signingCredential.untrusted' }],
      },
      false,
    );
    assert.deepEqual(s, {
      present: true,
      valid: true,
      generator: 'Make/2.0 c2pa-rs/0.1',
      signer: 'Cam Co',
      actions: [
        { action: 'c2pa.created', digital_source_type: 'digitalCapture', software_agent: 'Cam 1', when: null },
        { action: 'c2pa.edited', digital_source_type: null, software_agent: 'Ed', when: '2026-01-01T00:00:00Z' },
      ],
      trusted: null,
    });
    assert.equal(summaryFromStore({ validation_status: [{ code: 'claim.missing' }] }, false).valid, false);
  });
});

describe('provenance scan: hostile bytes', () => {
  const JUMBF_C2PA = jumbf('c2pa');
  // The pieces a hostile file is made of: real headers, lengths past the end or huge, boxes nested in boxes.
  const u32 = fc
    .constantFrom(0, 1, 2, 7, 8, 0xff, 0xffff, 0x7fffffff, 0xffffffff)
    .chain((n) => fc.constant(Buffer.from([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff])));
  const xmpNasty = fc.constantFrom(
    pf.xmpPacket('trainedAlgorithmicMedia'),
    '<x xmlns:a="http://iptc.org/std/Iptc4xmpExt/2008-02-29/" a:DigitalSourceType="',
    '<a:DigitalSourceType><![CDATA[',
    '<!DOCTYPE x [<!ENTITY a "&a;&a;">]>&a;&#xFFFFFFF;&#99999999;&bogus;',
    'xmlns:' + 'p'.repeat(70) + '="http://iptc.org/std/Iptc4xmpExt/2008-02-29/"',
    '\uFFFD\uD800<\u0000>',
  );
  const piece = fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    u32,
    fc.constantFrom(
      Buffer.from([0xff, 0xe1]),
      Buffer.from([0xff, 0xeb]),
      Buffer.from([0xff, 0xff, 0xff]),
      Buffer.from([0xff, 0xda]),
      Buffer.from('JP\0\x01\0\0\0\x01'),
      Buffer.from('jumbjumdc2pa'),
      JUMBF_C2PA,
      JUMBF_C2PA.subarray(0, 20),
      Buffer.from('http://ns.adobe.com/xap/1.0/\0'),
      Buffer.from('http://ns.adobe.com/xmp/extension/\0'),
      Buffer.from('caBXiTXtzTXttEXtIEND'),
      Buffer.from('XML:com.adobe.xmp\0\x01\0'),
      Buffer.from('RIFF\xff\xff\xff\xffWEBPXMP C2PA', 'latin1'),
      Buffer.from('!\xff\x0bXMP DataXMP', 'latin1'),
      Buffer.from('!\xff\x0bC2PA_GIF\x01\0\0', 'latin1'),
      Buffer.from([0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0x87]),
    ),
    xmpNasty.map((s) => Buffer.from(s)),
  );
  const HEADS: Record<ImageFormat, Buffer> = {
    jpeg: Buffer.from([0xff, 0xd8]),
    png: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    gif: Buffer.from('GIF89a\x01\0\x01\0\xf7\0\0', 'latin1'),
    webp: Buffer.from('RIFF\0\0\x10\0WEBP', 'latin1'),
  };
  const holds = (bytes: Uint8Array, format: ImageFormat) => {
    const m = scanMarkers(bytes, format);
    assert.equal(typeof m.c2pa, 'boolean');
    assert.ok(m.xmpSourceType === null || (IPTC_SOURCE_TYPES as readonly string[]).includes(m.xmpSourceType));
  };

  it('never throws on files built from nasty pieces, and names only terms of the vocabulary', () => {
    fc.assert(
      fc.property(fc.constantFrom(...FORMATS), fc.array(piece, { maxLength: 24 }), (format, pieces) =>
        holds(Buffer.concat([HEADS[format], ...pieces]), format),
      ),
      { numRuns: 3000 },
    );
  });

  it('never throws on real marked files truncated, overwritten or with lengths made huge', async () => {
    const lib = await pf.c2paLibrary();
    const samples: Array<[ImageFormat, Buffer]> = [];
    for (const format of FORMATS) {
      samples.push([format, await pf.imageWithXmpSourceType(format, 'trainedAlgorithmicMedia')]);
      if (lib) samples.push([format, await pf.c2paSignedImage(format, { sourceType: 'algorithmicMedia' })]);
    }
    fc.assert(
      fc.property(
        fc.constantFrom(...samples),
        fc.nat(),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom(0x00, 0x01, 0x7f, 0xff)), { maxLength: 8 }),
        ([format, sample], cut, writes) => {
          const bytes = Buffer.from(sample.subarray(0, Math.max(2, cut % (sample.length + 1))));
          for (const [at, v] of writes) if (bytes.length) bytes[at % bytes.length] = v;
          holds(bytes, format);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('stays linear on packets made to make a pattern backtrack; reads at most MAX_XMP_BYTES', async () => {
    const ns = 'xmlns:a="http://iptc.org/std/Iptc4xmpExt/2008-02-29/" ';
    for (const unit of [
      ' a:DigitalSourceType="',
      '<a:DigitalSourceType ',
      '<a:DigitalSourceType>',
      ' xmlns:a = ',
      '<![CDATA[',
      '&#',
    ])
      assert.equal(
        digitalSourceType(Buffer.from(ns + unit.repeat(Math.ceil(MAX_XMP_BYTES / unit.length)))),
        null,
        unit,
      );
    // A term past the cap is not read; the same within it is.
    const gif = await pf.plainImage('gif');
    const padded = (n: number) =>
      pf.gifWithXmp(gif, ns.replace(/^/, '<d ') + ' '.repeat(n) + ' a:DigitalSourceType="algorithmicMedia"/>');
    assert.equal(scanMarkers(padded(1000), 'gif').xmpSourceType, 'algorithmicMedia');
    assert.equal(scanMarkers(padded(MAX_XMP_BYTES), 'gif').xmpSourceType, null);
  });

  it('finds C2PA only in a c2pa-labelled JUMBF where the format puts it', async () => {
    const jpeg = await pf.plainImage('jpeg');
    assert.equal(scanMarkers(fakeC2paJpeg(jpeg), 'jpeg').c2pa, true);
    assert.equal(scanMarkers(fakeC2paJpeg(jpeg, jumbf('cawg')), 'jpeg').c2pa, false, 'another JUMBF');
    assert.equal(
      scanMarkers(fakeC2paJpeg(jpeg, Buffer.from('garbage garbage garbage garbage garbage')), 'jpeg').c2pa,
      false,
    );
    const png = await pf.plainImage('png');
    assert.equal(
      scanMarkers(Buffer.concat([png.subarray(0, 33), pngChunk('caBX', JUMBF_C2PA), png.subarray(33)]), 'png').c2pa,
      true,
    );
    assert.equal(
      scanMarkers(Buffer.concat([png.subarray(0, 33), pngChunk('caBx', JUMBF_C2PA), png.subarray(33)]), 'png').c2pa,
      false,
    );
  });
});

// --- helpers ----------------------------------------------------------------------------------------------------

function app1(id: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(id, 'latin1'), data]);
  const head = Buffer.from([0xff, 0xe1, 0, 0]);
  head.writeUInt16BE(body.length + 2, 2);
  return Buffer.concat([head, body]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A JUMBF superbox whose description box carries `label` (the C2PA manifest store's type UUID when `c2pa`). */
function jumbf(label: string): Buffer {
  const uuid = label === 'c2pa' ? Buffer.from('6332706100110010800000aa00389b71', 'hex') : Buffer.alloc(16, 7);
  const jumdBody = Buffer.concat([uuid, Buffer.from([0x03]), Buffer.from(label + '\0', 'latin1')]);
  const jumd = Buffer.concat([Buffer.from([0, 0, 0, 8 + jumdBody.length]), Buffer.from('jumd'), jumdBody]);
  const size = Buffer.alloc(4);
  size.writeUInt32BE(8 + jumd.length, 0);
  return Buffer.concat([size, Buffer.from('jumb'), jumd]);
}

/** A JPEG with an APP11 segment holding `box` as JPEG XT does (no valid manifest: for the scan alone). */
function fakeC2paJpeg(jpeg: Buffer, box = jumbf('c2pa')): Buffer {
  const body = Buffer.concat([Buffer.from('JP'), Buffer.from([0, 1, 0, 0, 0, 1]), box]);
  const head = Buffer.from([0xff, 0xeb, 0, 0]);
  head.writeUInt16BE(body.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), head, body, jpeg.subarray(2)]);
}

function library(fromAsset: () => Promise<{ json(): unknown } | null>): C2paLibrary {
  return { Reader: { fromAsset } };
}
