/**
 * The costly half of the provenance stage, run only when the scan found a C2PA manifest store: the C2PA project's
 * own reader (`@contentauth/c2pa-node`, an optional dependency: a prebuilt native library inside its npm package)
 * validates it — the claim's signature, the hash binding of the manifest to these bytes, the signer's chain against
 * the trust anchors when C2PA_TRUST_ANCHORS names some — and gives the claim generator, the signer and the actions.
 *
 * Where the package is not installed or does not load (C2PA_READER=auto), or C2PA_READER=off, a manifest is
 * reported "present, not verified": `{present: true, valid: null, generator: null, signer: null, actions: []}`.
 * Nothing the manifest says is reported unless the library read it.
 *
 * What `valid` means (docs/provenance.md): true when the library found the signature and the hash bindings intact
 * (its validation state `Valid` or `Trusted`), false when it found them broken (`Invalid`: tampered bytes, a bad
 * signature, a malformed claim), with its failure codes. A signer that chains to no configured anchor is not
 * "invalid": `trusted` says whether it chains to one (null when no trust anchors are configured).
 */
import type { ImageFormat } from '../../domain/image-format.ts';
import { MIME_OF } from '../../domain/image-format.ts';
import { sourceTypeTerm, type C2paAction, type C2paSummary } from '../../domain/uploads/provenance.ts';

export interface C2paReader {
  /** Reads and validates the manifest store of an image the scan found one in. Never throws. */
  read(bytes: Uint8Array, format: ImageFormat): Promise<C2paSummary>;
}

/** A manifest is there; nothing could check it (no library, or the library could not read it). */
export const notVerified = (): C2paSummary => ({
  present: true,
  valid: null,
  generator: null,
  signer: null,
  actions: [],
});

/** The package name, in a variable: TypeScript does not resolve it, so the code type-checks where it is absent. */
export const C2PA_PACKAGE = '@contentauth/c2pa-node';

/** The part of the library this module uses. */
export interface C2paLibrary {
  Reader: {
    fromAsset(
      asset: { buffer: Buffer; mimeType: string },
      settings?: string | object,
    ): Promise<{ json(): unknown } | null>;
  };
}

/** How a worker thread reads manifests (C2PA_READER, C2PA_TRUST_ANCHORS). */
export interface C2paSettings {
  reader: 'auto' | 'off';
  /** PEM text of the trust anchors, or null. */
  trustAnchors: string | null;
}

export interface LibraryReaderOptions {
  /** PEM text of the trust anchors (C2PA_TRUST_ANCHORS' file); none: signers are not checked against a list. */
  trustAnchors?: string | null;
  /** Loads the library; default: a dynamic import of the package. Tests inject a failing one. */
  load?: () => Promise<C2paLibrary>;
  /** Called once, when the library cannot be loaded (the worker warns: manifests are "present, not verified"). */
  onUnavailable?: (err: Error) => void;
}

/** Strings from a manifest are the uploader's: at most this many characters, control characters removed. */
const MAX_TEXT = 200;
/** Actions reported at most (a manifest may list any number). */
export const MAX_ACTIONS = 32;

const text = (v: unknown): string | null => {
  if (typeof v !== 'string') return null;
  // eslint-disable-next-line no-control-regex
  const s = v.replace(/[\u0000-\u001f\u007f-\u009f]/g, '').trim();
  return s ? s.slice(0, MAX_TEXT) : null;
};
const obj = (v: unknown): Record<string, unknown> | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The claim generator: `claim_generator` (claims v1), else the first `claim_generator_info`'s name and version. */
function generatorOf(m: Record<string, unknown>): string | null {
  const info = obj(arr(m.claim_generator_info)[0]);
  const name = text(info?.name);
  if (name) {
    const version = text(info?.version);
    return (version ? `${name}/${version}` : name).slice(0, MAX_TEXT);
  }
  return text(m.claim_generator);
}

/** The actions of the `c2pa.actions` / `c2pa.actions.v2` assertions (numbered duplicates included), in order. */
function actionsOf(m: Record<string, unknown>): C2paAction[] {
  const out: C2paAction[] = [];
  for (const a of arr(m.assertions)) {
    const assertion = obj(a);
    if (typeof assertion?.label !== 'string' || !/^c2pa\.actions(\.v2)?(__\d+)?$/.test(assertion.label)) continue;
    for (const entry of arr(obj(assertion.data)?.actions)) {
      const act = obj(entry);
      const action = text(act?.action);
      if (!act || !action) continue;
      const agent = act.softwareAgent;
      out.push({
        action,
        digital_source_type: sourceTypeTerm(typeof act.digitalSourceType === 'string' ? act.digitalSourceType : null),
        software_agent: text(agent) ?? text(obj(agent)?.name),
        when: text(act.when),
      });
      if (out.length >= MAX_ACTIONS) return out;
    }
  }
  return out;
}

const UNTRUSTED = 'signingCredential.untrusted';

/** Codes of the validation failures, deduplicated, in order: the results' own when present, else the status list. */
function failureCodes(store: Record<string, unknown>): string[] {
  const results = obj(obj(store.validation_results)?.activeManifest);
  const list = results ? arr(results.failure) : arr(store.validation_status);
  // An untrusted signer is not a failure of the manifest (`trusted` says it).
  const codes = list.map((s) => text(obj(s)?.code)).filter((c): c is string => c !== null && c !== UNTRUSTED);
  return [...new Set(codes)].slice(0, MAX_ACTIONS);
}

/**
 * The summary of a manifest store as the library's Reader gives it (`reader.json()`): the active manifest's
 * generator, signer and actions, and what its validation found. `trustConfigured`: trust anchors were given.
 */
export function summaryFromStore(json: unknown, trustConfigured: boolean): C2paSummary {
  const store = obj(json);
  const label = typeof store?.active_manifest === 'string' ? store.active_manifest : null;
  const manifests = obj(store?.manifests);
  const active = label && manifests ? obj(manifests[label]) : null;
  if (!store || !active) return { ...notVerified(), valid: false, validation_errors: ['manifest.missing'] };
  const failures = failureCodes(store);
  // validation_state: Invalid | Valid (signature and bindings intact) | Trusted (and the signer chains to an anchor)
  const state = typeof store.validation_state === 'string' ? store.validation_state : null;
  const valid = state ? state !== 'Invalid' : failures.length === 0;
  const sig = obj(active.signature_info);
  return {
    present: true,
    valid,
    generator: generatorOf(active),
    signer: text(sig?.issuer) ?? text(sig?.common_name),
    actions: actionsOf(active),
    trusted: trustConfigured ? state === 'Trusted' : null,
    ...(valid ? {} : { validation_errors: failures }),
  };
}

/**
 * A reader backed by the C2PA library, loaded on the first manifest (plain images never load it). A library that
 * cannot be loaded is reported once and every manifest after it is "present, not verified"; one that cannot read
 * a manifest (it throws, or finds none where the scan saw one) gives the same for that image.
 */
export function libraryC2paReader(opts: LibraryReaderOptions = {}): C2paReader {
  const load = opts.load ?? (async () => (await import(C2PA_PACKAGE)) as C2paLibrary);
  const trustAnchors = opts.trustAnchors?.trim() || null;
  const settings = trustAnchors ? { trust: { verify_trust_list: true, trust_anchors: trustAnchors } } : undefined;
  let library: Promise<C2paLibrary | null> | undefined;
  const loaded = () =>
    (library ??= load().then(
      (lib) => lib,
      (err: unknown) => {
        opts.onUnavailable?.(err instanceof Error ? err : new Error(String(err)));
        return null;
      },
    ));
  return {
    async read(bytes, format) {
      const lib = await loaded();
      if (!lib) return notVerified();
      try {
        const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        const reader = await lib.Reader.fromAsset({ buffer, mimeType: MIME_OF[format] }, settings);
        return reader ? summaryFromStore(reader.json(), trustAnchors !== null) : notVerified();
      } catch {
        return notVerified();
      }
    },
  };
}
