/**
 * The pages' views as trees (issue 47): a view is a function of its data that returns elements made with `h()`,
 * the same code on both sides. The server writes the tree as markup (src/gateway/web-render.ts, `toHtml`); the
 * browser builds it as DOM (web/lib/dom.js, `toDom`), or adopts the server's markup of it. Served to the pages as
 * web/lib/vnode.js, generated from this file (src/gateway/web-assets.ts): it imports nothing.
 */

/** An element: its tag, its attributes in order, its children (elements and text, flattened). */
export interface VNode {
  tag: string;
  attrs: VAttrs;
  children: Array<VNode | string>;
}

/** Attribute values: null, undefined and false leave the attribute out; true writes it without a value. */
export type VAttrs = Record<string, string | number | boolean | null | undefined>;

/** What may stand as a child: null, undefined and false are left out, arrays flattened, numbers as text. */
export type VChild = VNode | string | number | boolean | null | undefined | VChild[];

/**
 * An element of a view.
 * @param tag the element's name
 * @param attrs its attributes, in the order they are written
 * @param children elements and text
 */
export function h(tag: string, attrs: VAttrs | null, ...children: VChild[]): VNode {
  const out: Array<VNode | string> = [];
  const add = (c: VChild): void => {
    if (Array.isArray(c)) c.forEach(add);
    else if (c === null || c === undefined || c === false || c === true) return;
    else out.push(typeof c === 'number' ? String(c) : c);
  };
  children.forEach(add);
  return { tag, attrs: attrs ?? {}, children: out };
}
