/**
 * Where a visitor may be sent back to. There is no local-path.js file: src/gateway/web-assets.ts serves this module,
 * generated from src/gateway/local-path.ts (the one check the server uses too).
 */
export { localPath } from '../../src/gateway/local-path.ts';
