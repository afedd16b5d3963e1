/**
 * openapi-typescript, run on a served OpenAPI document. It lives in this small package of its own
 * (a `file:` dev dependency of pixvote) because openapi-typescript builds its output with the TypeScript 5
 * compiler API (a peer dependency), while the project's own `typescript` is 7 (the native compiler, which has
 * no such API): here the two versions sit side by side without the root `tsc` changing.
 */
import openapiTS, { astToString } from 'openapi-typescript';

/** TypeScript declarations (`paths`, `components`, `operations`) for a document, with openapi-typescript's defaults. */
export async function generateTypes(document: object): Promise<string> {
  return astToString(await openapiTS(structuredClone(document) as Parameters<typeof openapiTS>[0]));
}
