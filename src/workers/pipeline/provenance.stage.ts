/**
 * Provenance stage: what the original bytes say about where the image comes from, read before anything decodes or
 * re-encodes them (the variants carry no metadata). A linear scan of the container (provenance-scan.ts) finds the
 * XMP's IPTC DigitalSourceType and whether a C2PA manifest store is embedded; only then is the C2PA library asked
 * to validate and summarise it (c2pa-reader.ts), so plain images pay for the scan alone.
 */
import { provenanceOf, type C2paSummary, type Provenance } from '../../domain/uploads/provenance.ts';
import type { ImageFormat } from '../../domain/image-format.ts';
import { notVerified, type C2paReader } from './c2pa-reader.ts';
import { scanMarkers } from './provenance-scan.ts';

/**
 * The image's Provenance: the XMP's source type and the C2PA summary (null when the file carries no manifest;
 * "present, not verified" when it does and no reader is given). Never throws on the bytes.
 */
export async function readProvenance(
  bytes: Uint8Array,
  format: ImageFormat,
  reader: C2paReader | null,
): Promise<Provenance> {
  const markers = scanMarkers(bytes, format);
  let c2pa: C2paSummary | null = null;
  if (markers.c2pa) c2pa = reader ? await reader.read(bytes, format) : notVerified();
  return provenanceOf(markers.xmpSourceType, c2pa);
}
