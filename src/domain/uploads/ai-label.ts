/**
 * What pixvote does with a provenance marker that says an image was generated (issue 50; API.md "Provenance"):
 * `AI_POLICY` decides at upload, and the upload's label (`ai_label`) is what listings filter on (`ai=exclude|only`)
 * and what the pages show. A label rests on something: a marker in the file (`marker`), or the owner's word
 * (`owner`). The owner may add a label by hand, and remove only their own: a marker-based one stays.
 */
import { errors } from '../errors.ts';
import { GENERATED_SOURCE_TYPES, type Provenance } from './provenance.ts';

/** AI_POLICY: `label` (accept and label), `hold` (accept held for a moderator), `reject` (400), `off` (ignore). */
export type AiPolicy = 'label' | 'hold' | 'reject' | 'off';
export const AI_POLICIES: readonly AiPolicy[] = ['label', 'hold', 'reject', 'off'];

/** What an upload's AI label rests on: a marker in the file, or the owner's word. */
export type AiLabel = 'marker' | 'owner';

/** The `ai` filter of a listing: only labelled uploads, or none of them. */
export type AiFilter = 'only' | 'exclude';

/** Whether a C2PA action of the manifest names a generated source type (else the IPTC XMP said it). */
export function c2paSaysGenerated(p: Provenance): boolean {
  return Boolean(
    p.c2pa?.actions.some((a) => a.digital_source_type && GENERATED_SOURCE_TYPES.has(a.digital_source_type)),
  );
}

/**
 * The marker that says generated, in words (a modlog reason, an error message): "C2PA manifest signed by Acme
 * (trainedAlgorithmicMedia)" or "IPTC DigitalSourceType trainedAlgorithmicMedia in the file's XMP"; null when none.
 */
export function generatedMarker(p: Provenance | null): string | null {
  if (!p || p.ai_generated !== true) return null;
  if (c2paSaysGenerated(p)) {
    const c = p.c2pa!;
    const type = c.actions.find((a) => a.digital_source_type && GENERATED_SOURCE_TYPES.has(a.digital_source_type));
    const signer = c.signer ? ` signed by ${c.signer}` : '';
    const check = c.valid === true ? '' : c.valid === false ? ', invalid' : ', not verified';
    return `C2PA manifest${signer} (${type!.digital_source_type!}${check})`;
  }
  return `IPTC DigitalSourceType ${p.source_type ?? 'unknown'} in the file's XMP`;
}

/** What AI_POLICY makes of an image's provenance at upload: what is stored, its label, and whether it is held. */
export interface AiDecision {
  /** Stored on the record; null under `off` (nothing read is kept). */
  provenance: Provenance | null;
  aiLabel: AiLabel | null;
  /** The modlog reason when the policy holds it (`hold`), else null. */
  hold: string | null;
}

/**
 * Under AI_POLICY=reject, the refusal's message when a marker says generated, else null: the worker asks it right
 * after reading the markers, so a refused image is never decoded or encoded (process-image.ts), and aiDecision
 * repeats it for any processor that did not.
 */
export function aiRefusal(p: Provenance): string | null {
  const marker = generatedMarker(p);
  return marker
    ? `this image is marked as AI-generated (${marker}) and this server does not accept AI-generated images`
    : null;
}

/** The policy's decision; `reject` with a marker that says generated throws 400 `ai_generated` naming it. */
export function aiDecision(policy: AiPolicy, provenance: Provenance): AiDecision {
  if (policy === 'off') return { provenance: null, aiLabel: null, hold: null };
  const marker = generatedMarker(provenance);
  if (!marker) return { provenance, aiLabel: null, hold: null };
  if (policy === 'reject') throw errors.aiGenerated(aiRefusal(provenance)!);
  return { provenance, aiLabel: 'marker', hold: policy === 'hold' ? `AI-generated: ${marker}` : null };
}

/**
 * The label after the owner's `"ai_generated": true|false`: true adds an owner label (a marker's stays as it is);
 * false removes only an owner label. A marker-based label cannot be removed: 400 `invalid_request` naming the field
 * (the request asks for something the file contradicts, whoever asks; not a question of permission).
 */
export function ownerLabel(
  current: AiLabel | null,
  aiGenerated: boolean,
  provenance: Provenance | null,
): AiLabel | null {
  if (aiGenerated) return current ?? 'owner';
  if (current === 'marker') {
    const marker = generatedMarker(provenance) ?? 'its provenance';
    throw errors.invalid(
      `ai_generated cannot be false: the label rests on a marker in the file (${marker}), not on the owner; ` +
        'only a label added by hand can be removed',
    );
  }
  return null;
}
