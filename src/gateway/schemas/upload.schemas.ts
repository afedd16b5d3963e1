import { z } from 'zod';
import { MAX_DESCRIPTION } from '../../domain/uploads/upload.service.ts';
import { MAX_FILE_BYTES } from '../../domain/uploads/limits.ts';
import { MAX_CHECK_HASHES } from '../../domain/uploads/check-hashes.ts';
import { Success, boundedText } from './common.schemas.ts';

const single = (field: string) => (v: unknown) => (Array.isArray(v) ? { __multiple: field } : v);

const descriptionField = z.preprocess(
  single('description'),
  boundedText('description', { max: MAX_DESCRIPTION, typeMessage: 'description must be a string (sent once)' }).default(
    '',
  ),
);

const boolField = z.preprocess(
  single('is_private'),
  z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0'])], { error: 'is_private must be true or false' })
    .transform((v) => v === true || v === 'true' || v === '1')
    .default(false),
);

const text = (field: string) =>
  z.preprocess(single(field), z.string({ error: `${field} must be a string (sent once)` }).optional());

const uploadType = (example: 'image' | 'link') =>
  z
    .preprocess(
      single('upload_type'),
      z.enum(['image', 'image_url', 'link'], { error: 'upload_type must be image, image_url or link' }),
    )
    .describe('`image` needs the multipart field `file`; `image_url` needs `image_url`; `link` needs `external_url`.')
    .meta({ examples: [example] });

/** The fields of `POST /api/v1/upload` (multipart form fields, or the same names in a JSON body for URLs and links). */
export const UploadFields = z
  .object({
    upload_type: uploadType('link'),
    description: descriptionField
      .describe(`At most ${MAX_DESCRIPTION} characters.`)
      .meta({ examples: ['Miso asleep on the radiator again'] }),
    // A list is accepted too (a JSON array, or the field sent several times in a form).
    tags: z
      .union([z.string(), z.array(z.string()).transform((v) => v.join(','))], {
        error: 'tags must be a comma-separated string',
      })
      .optional()
      .describe('Comma-separated tag names, at most 10, normalized and validated as in `POST /api/uploads/{id}/tags`.')
      .meta({ examples: ['cats, cute'] }),
    is_private: boolField
      .describe(
        'Default `false`. Private uploads are unlisted: reachable by anyone who has the id, in no listing and no ' +
          'tag count (owners find theirs in /api/profile).',
      )
      .meta({ examples: [false] }),
    image_url: text('image_url')
      .describe('For `upload_type=image_url`: an http(s) URL of an image the service fetches (public addresses only).')
      .meta({ examples: ['https://upload.wikimedia.org/wikipedia/commons/3/3a/Cat03.jpg'] }),
    external_url: text('external_url')
      .describe('For `upload_type=link`: an http(s) URL of at most 2048 characters.')
      .meta({ examples: ['https://www.youtube.com/watch?v=J---aiyznGQ'] }),
  })
  .meta({
    examples: [
      {
        upload_type: 'link',
        external_url: 'https://www.youtube.com/watch?v=J---aiyznGQ',
        description: 'Keyboard cat, the original',
        tags: 'cats, music',
        is_private: false,
      },
      {
        upload_type: 'image_url',
        image_url: 'https://upload.wikimedia.org/wikipedia/commons/3/3a/Cat03.jpg',
        description: 'A tabby in the grass',
        tags: 'cats',
        is_private: false,
      },
    ],
  });
export type UploadFields = z.output<typeof UploadFields>;

export const PrivacyBody = z
  .object({ is_private: z.boolean({ error: 'is_private must be true or false' }).meta({ examples: [true] }) })
  .meta({ examples: [{ is_private: true }] });

/** `PATCH /api/upload/{id}`: the owner's own label (docs/provenance.md, "Labels"). */
export const UploadPatchBody = z
  .object({
    ai_generated: z
      .boolean({ error: 'ai_generated must be true or false' })
      .describe(
        'true adds a "Made with AI" label resting on the owner\'s word (`ai_label: owner`); false removes only ' +
          'such a label: a label resting on a marker in the file cannot be removed (400 `invalid_request`).',
      )
      .meta({ examples: [true] }),
  })
  .meta({ examples: [{ ai_generated: true }] });

export const ImageQuery = z.object({
  size: z
    .enum(['thumb', 'medium', 'full'], { error: 'size must be thumb, medium or full' })
    .default('full')
    .meta({ examples: ['medium'] }),
});

/**
 * The multipart form of an image upload: the fields above plus the file. Documents the body; the file is read by
 * the multipart middleware. The document gives `file` as bytes (contentMediaType) and its accepted types (encoding).
 */
export const UploadForm = UploadFields.extend({
  upload_type: uploadType('image'),
  file: z
    .file()
    .optional()
    .describe(
      `The image (JPEG, PNG, GIF or WebP by its bytes), at most ${MAX_FILE_BYTES} bytes. ` +
        'Required when upload_type=image.',
    ),
}).meta({
  examples: [
    { upload_type: 'image', description: 'Miso asleep on the radiator again', tags: 'cats, cute', is_private: false },
  ],
});

export const Tag = z.object({
  id: z.uuid(),
  name: z.string().describe('Normalized: trimmed, lowercased, inner whitespace collapsed.'),
  slug: z.string().describe('The name with spaces replaced by `-`.'),
});

export const ImageInfo = z.object({
  width: z.int().positive().describe('Of the original as displayed (EXIF orientation applied).'),
  height: z.int().positive(),
  mime: z.literal('image/webp'),
  animated: z.boolean(),
  url: z.string().describe('`/api/image/{id}`'),
  thumbnail_url: z.string().describe('`/api/image/{id}?size=thumb`'),
  thumbhash: z.string().nullable().describe('ThumbHash placeholder, base64.'),
  human_score: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('Highest person score of the detector; null when HUMAN_POLICY=off.'),
});

export const Embed = z.object({
  provider: z.enum(['youtube', 'spotify', 'bluesky', 'instagram', 'threads', 'tumblr']).nullable(),
  embed_url: z.string().nullable(),
  html: z.string().nullable(),
});

export const VoteValue = z.enum(['fucks', 'does_not_fuck']);

const C2paAction = z.object({
  action: z.string().describe('`c2pa.created`, `c2pa.edited`, …'),
  digital_source_type: z.string().nullable().describe("IPTC term of the action's `digitalSourceType`."),
  software_agent: z.string().nullable(),
  when: z.string().nullable(),
});

/** API.md "Provenance": what was read from the original bytes at upload. */
export const Provenance = z.object({
  ai_generated: z
    .boolean()
    .nullable()
    .describe(
      'true when a marker says generated (IPTC `trainedAlgorithmicMedia`, `compositeWithTrainedAlgorithmicMedia`, ' +
        '`algorithmicMedia`, or a C2PA action with such a source type), false when a marker says otherwise, ' +
        'null when the file carries no marker (never guessed).',
    ),
  source_type: z.string().nullable().describe('IPTC `DigitalSourceType` term (XMP, else the C2PA actions).'),
  c2pa: z
    .object({
      present: z.boolean(),
      valid: z
        .boolean()
        .nullable()
        .describe('Validated by the C2PA library: true / false; null: present, not verified (library absent).'),
      generator: z.string().nullable().describe('Claim generator.'),
      signer: z.string().nullable().describe("The signing certificate's subject."),
      actions: z.array(C2paAction),
      trusted: z
        .boolean()
        .nullable()
        .optional()
        .describe(
          "Whether the signer's certificate chains to a configured trust anchor (`C2PA_TRUST_ANCHORS`); null when " +
            'none are configured or nothing was verified. An untrusted signer does not make a manifest invalid.',
        ),
      validation_errors: z.array(z.string()).optional().describe('Failure codes when `valid` is false.'),
    })
    .nullable()
    .describe('The C2PA manifest (Content Credentials), or null when the file has none.'),
});

export const UploadRecord = z.object({
  id: z.uuid(),
  user_id: z.uuid(),
  username: z.string(),
  filename: z.string().nullable().describe('Null for links.'),
  original_name: z
    .string()
    .max(255)
    .nullable()
    .describe(
      "The client's file name (or the last segment of `image_url`), NFC-normalized, " +
        'without control, bidi-control or zero-width characters, at most 255 characters; never a path. Null for links.',
    ),
  description: z.string(),
  upload_type: z.enum(['image', 'link']).describe('An `image_url` upload is an `image` with `source_url` set.'),
  external_url: z.string().nullable().describe('Set for links.'),
  source_url: z.string().nullable().describe('Set for images fetched from `image_url`.'),
  upvotes: z.int().nonnegative(),
  downvote_count: z.int().nonnegative(),
  is_private: z.boolean(),
  tags: z.array(Tag),
  created_at: z.iso.datetime(),
  image: ImageInfo.nullable().describe('Null for links.'),
  embed: Embed.nullable().describe('Links only, built from the URL without network access.'),
  moderation: z
    .enum(['visible', 'held', 'removed'])
    .describe(
      '`held`: under review, out of every listing (only its owner and admins can open it); ' +
        '`removed`: a tombstone that only admins read (API.md Moderation).',
    ),
  provenance: Provenance.nullable().describe(
    'Provenance markers read from the original bytes at upload (docs/provenance.md). Null for links, for images ' +
      'stored before provenance was read and under `AI_POLICY=off`.',
  ),
  ai_label: z
    .enum(['marker', 'owner'])
    .nullable()
    .describe(
      'The "Made with AI" label and what it rests on: `marker` (a marker in the file says generated), `owner` ' +
        '(the owner marked it, `PATCH /api/upload/{id}`), null (no label). `ai=only|exclude` filters on it.',
    ),
  my_vote: VoteValue.nullable()
    .optional()
    .describe("The caller's vote; present on single-upload responses to an authenticated caller."),
});

/** `GET /api/upload/{id}/provenance`: the summary as read, with the label it gives. */
export const ProvenanceSummary = Provenance.extend({
  upload_id: z.uuid(),
  ai_label: UploadRecord.shape.ai_label,
});

export const DuplicateNotice = z.object({
  duplicate: z.literal(true),
  existingUploadId: z.uuid(),
  message: z.string(),
  match: z.enum(['exact', 'near']),
  distance: z.int().min(0).max(64).describe('Hamming distance of the perceptual hashes; 0 for an exact match.'),
});

/** A resumable (tus) upload as created: its id, offset and length. */
export const ResumableState = z.object({
  id: z.uuid(),
  offset: z.int().min(0).describe('Bytes received (Upload-Offset).'),
  length: z.int().min(0).describe('Upload-Length.'),
  result: z
    .object({
      status: z.int().describe('201 (record), 200 (duplicate notice) or the error status.'),
      body: z.record(z.string(), z.unknown()).describe('What `GET …/result` answers: record, notice or error body.'),
    })
    .optional()
    .describe(
      'Present when the creation brought the whole file (creation-with-upload), or replays one that did: the ' +
        'upload use case has run, and this is its answer, so no `GET …/result` is needed.',
    ),
});
export const ResumableStatusBody = z.object({
  offset: z.int().min(0),
  length: z.int().min(0),
  status: z.enum(['receiving', 'processing', 'done']),
});
export const ResumablePending = z.object({ status: z.enum(['receiving', 'processing']) });

export const UploadDeleted = Success.extend({ id: z.uuid() });

const SHA256 = /^[0-9a-f]{64}$/;
const EXAMPLE_SHA256 = 'a3f5c0e1b2d4967880a1b2c3d4e5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8';

/** `POST /api/uploads/check`: the digests a bulk client is about to upload. */
export const HashCheckBody = z
  .object({
    sha256: z
      .array(
        z
          .string({ error: 'must be a string' })
          .transform((s) => s.toLowerCase())
          .pipe(z.string().regex(SHA256, { error: 'must be 64 hexadecimal characters (a SHA-256 digest)' })),
        { error: 'sha256 must be an array of SHA-256 digests' },
      )
      .min(1, { error: 'sha256 must list at least one digest' })
      .max(MAX_CHECK_HASHES, { error: `sha256 lists more than ${MAX_CHECK_HASHES} digests; send them in batches` })
      .describe(`1–${MAX_CHECK_HASHES} SHA-256 digests (hex, either case) of the files' bytes.`)
      .meta({ examples: [[EXAMPLE_SHA256]] }),
  })
  .meta({ examples: [{ sha256: [EXAMPLE_SHA256] }] });

/** Its answer: one result per digest, in request order. */
export const HashCheckResults = z.object({
  results: z.array(
    z.object({
      sha256: z.string().regex(SHA256),
      status: z
        .enum(['new', 'exists', 'blocked'])
        .describe(
          '`blocked`: an upload of these bytes is refused (400 `blocked_content`); `exists`: it answers the ' +
            'duplicate notice of `upload_id`; `new`: it is processed.',
        ),
      upload_id: z.uuid().nullable().describe('The existing upload, when `exists`.'),
    }),
  ),
});
