/**
 * There is no modlog-view.js file: src/gateway/web-assets.ts serves this module, generated from
 * src/gateway/views/modlog-view.ts (the server renders the same views).
 */
export * from '../../src/gateway/views/modlog-view.ts';
