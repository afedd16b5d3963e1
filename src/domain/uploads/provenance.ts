/**
 * Provenance of an image as read from its original bytes at upload (API.md, "Provenance"): a C2PA manifest
 * (Content Credentials) and the IPTC `DigitalSourceType` of its XMP. The pipeline re-encodes every image and so
 * strips both; what is not read at upload is lost. Nothing here guesses: a label rests on a marker the file carries,
 * and a file without one is `ai_generated: null`, never false.
 *
 * Plain data only: a Provenance crosses the worker-thread boundary inside ProcessedImage.
 */

/** IPTC NewsCodes "digitalsourcetype" vocabulary (https://cv.iptc.org/newscodes/digitalsourcetype/), current and retired terms. */
export const IPTC_SOURCE_TYPES = Object.freeze([
  'digitalCapture',
  'computationalCapture',
  'negativeFilm',
  'positiveFilm',
  'print',
  'humanEdits',
  'minorHumanEdits',
  'compositeCapture',
  'algorithmicallyEnhanced',
  'dataDrivenMedia',
  'digitalArt',
  'virtualRecording',
  'compositeSynthetic',
  'trainedAlgorithmicMedia',
  'compositeWithTrainedAlgorithmicMedia',
  'algorithmicMedia',
  'screenCapture',
  // retired terms still written by older tools
  'digitalCreation',
  'softwareImage',
] as const);

export type IptcSourceType = (typeof IPTC_SOURCE_TYPES)[number];

/** The terms that say a generator made the image (API.md: these three, directly or as a C2PA action's source type). */
export const GENERATED_SOURCE_TYPES: ReadonlySet<string> = new Set([
  'trainedAlgorithmicMedia',
  'compositeWithTrainedAlgorithmicMedia',
  'algorithmicMedia',
]);

const KNOWN: ReadonlySet<string> = new Set(IPTC_SOURCE_TYPES);
const IPTC_PREFIXES = [
  'http://cv.iptc.org/newscodes/digitalsourcetype/',
  'https://cv.iptc.org/newscodes/digitalsourcetype/',
];

/**
 * The IPTC term a marker names, from either its full URI
 * (`http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia`, what XMP and C2PA write) or the bare term; null for anything outside the vocabulary (a marker we cannot read says nothing).
 */
export function sourceTypeTerm(value: string | null | undefined): IptcSourceType | null {
  if (typeof value !== 'string') return null;
  let v = value.trim();
  for (const p of IPTC_PREFIXES) {
    if (v.toLowerCase().startsWith(p)) {
      v = v.slice(p.length);
      break;
    }
  }
  v = v.replace(/\/+$/, '');
  return KNOWN.has(v) ? (v as IptcSourceType) : null;
}

/** One `c2pa.actions` entry as read: the action (`c2pa.created`, `c2pa.edited`, …) and its source type, if any. */
export interface C2paAction {
  action: string;
  /** IPTC term of the action's `digitalSourceType`, or null when it names none (or one outside the vocabulary). */
  digital_source_type: string | null;
  /** `softwareAgent` of the action (name of the tool), when it names one. */
  software_agent: string | null;
  /** `when`, as the manifest wrote it, when present. */
  when: string | null;
}

export interface C2paSummary {
  /** A C2PA manifest store (JUMBF) is in the file. */
  present: boolean;
  /**
   * The C2PA library validated it (signature, hash binding to these bytes, trust list as configured): true; it
   * found it invalid: false; the library is not installed (or could not read it): null, "present, not verified".
   */
  valid: boolean | null;
  /** The active manifest's claim generator. */
  generator: string | null;
  /** The signing certificate's subject (organisation or common name). */
  signer: string | null;
  actions: C2paAction[];
  /**
   * Whether the signer's certificate chains to one of the configured trust anchors (C2PA_TRUST_ANCHORS): null when
   * none are configured or nothing was verified. An untrusted signer does not make a manifest invalid.
   */
  trusted?: boolean | null;
  /** The validator's failure codes when valid is false (e.g. `assertion.dataHash.mismatch`). */
  validation_errors?: string[];
}

export interface Provenance {
  ai_generated: boolean | null;
  /** IPTC DigitalSourceType term from the XMP, else from the C2PA actions; null when nothing names one. */
  source_type: string | null;
  c2pa: C2paSummary | null;
}

export const NO_PROVENANCE: Readonly<Provenance> = Object.freeze({ ai_generated: null, source_type: null, c2pa: null });

/**
 * Whether the markers say generated. A marker that says generated counts wherever it comes from (it is an admission,
 * and a forger gains nothing from it); a marker that says otherwise counts only from the XMP or a C2PA manifest
 * that did not fail validation. No marker: null.
 */
export function aiGeneratedFrom(xmpSourceType: string | null, c2pa: C2paSummary | null): boolean | null {
  const c2paTypes = c2pa ? c2pa.actions.map((a) => a.digital_source_type).filter((t): t is string => t !== null) : [];
  if (
    (xmpSourceType && GENERATED_SOURCE_TYPES.has(xmpSourceType)) ||
    c2paTypes.some((t) => GENERATED_SOURCE_TYPES.has(t))
  )
    return true;
  if (xmpSourceType) return false;
  if (c2pa && c2pa.valid !== false && c2paTypes.length > 0) return false;
  return null;
}

/** The record's provenance from what the reader found. */
export function provenanceOf(xmpSourceType: string | null, c2pa: C2paSummary | null): Provenance {
  const fromActions = c2pa?.actions.find((a) => a.digital_source_type !== null)?.digital_source_type ?? null;
  return {
    ai_generated: aiGeneratedFrom(xmpSourceType, c2pa),
    source_type: xmpSourceType ?? fromActions,
    c2pa,
  };
}
