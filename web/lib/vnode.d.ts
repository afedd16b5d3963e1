/**
 * There is no vnode.js file: src/gateway/web-assets.ts serves this module, generated from
 * src/gateway/views/vnode.ts (the server renders the same views).
 */
export * from '../../src/gateway/views/vnode.ts';
