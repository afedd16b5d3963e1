/**
 * Markup written by the server. The pages' views (src/gateway/views/: the feed, its cards, the modlog) are trees
 * that the browser builds as DOM from the same code (web/lib/dom.js, `toDom`); here `toHtml` writes such a tree
 * as markup, with no whitespace between elements, so the browser's parse of it is the DOM the module would build.
 * `el` writes one element from markup children, for the server's own fragments (page-meta.ts, upload-page.ts).
 * Every string goes through `escapeHtml`, in text and in attribute values (always quoted).
 */
import type { VAttrs, VNode } from './views/vnode.ts';

export { userPath } from './views/card-view.ts';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** Text for HTML content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

export type Attrs = VAttrs;

/** The elements that have no end tag (of those the pages use). */
const VOID = new Set(['img', 'input', 'meta', 'link']);

function openTag(tag: string, attrs: Attrs): string {
  let open = `<${tag}`;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    open += v === true ? ` ${k}` : ` ${k}="${escapeHtml(String(v))}"`;
  }
  return `${open}>`;
}

/** An element as markup: attributes in order (null, undefined and false left out), children already markup. */
export function el(tag: string, attrs: Attrs, ...children: string[]): string {
  return VOID.has(tag) ? openTag(tag, attrs) : `${openTag(tag, attrs)}${children.join('')}</${tag}>`;
}
/** Text content, escaped. */
export const text = (value: string | number) => escapeHtml(String(value));

/** A view's tree (or a list of them, as the content of `<main>`) as markup; its text escaped. */
export function toHtml(node: VNode | string | ReadonlyArray<VNode | string>): string {
  if (typeof node === 'string') return escapeHtml(node);
  if (Array.isArray(node)) return (node as ReadonlyArray<VNode | string>).map(toHtml).join('');
  const { tag, attrs, children } = node as VNode;
  return el(tag, attrs, ...children.map(toHtml));
}
