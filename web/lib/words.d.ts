/**
 * There is no words.js file: src/gateway/web-assets.ts serves this module, generated from
 * src/gateway/views/words.ts (the server renders the same views).
 */
export * from '../../src/gateway/views/words.ts';
