/**
 * There is no card-view.js file: src/gateway/web-assets.ts serves this module, generated from
 * src/gateway/views/card-view.ts (the server renders the same views).
 */
export * from '../../src/gateway/views/card-view.ts';
