// Building the pages: elements, text, the signed-in visitor. User text only ever becomes text nodes or attribute
// values: `h()` appends strings with `append()` (text), never through innerHTML, and links to user URLs pass
// `safeUrl()`.
import { ago, hostOf, plural, utcDate } from './words.js';

export { ago, hostOf, plural, utcDate };
/** @import { VNode } from './vnode.js' */

/** @typedef {Node | string | number | boolean | null | undefined | Child[]} Child */
/** @typedef {{ username: string, id: string | undefined, admin: boolean }} Visitor */

export const body = document.body;
/** The signed-in visitor, as the page's shell names them (src/gateway/routes/web.routes.ts), or null. */
export const ME = /** @type {Visitor | null} */ (
  body.dataset.user
    ? { username: body.dataset.user, id: body.dataset.userId, admin: body.dataset.role === 'admin' }
    : null
);
const main = /** @type {HTMLElement} */ (document.getElementById('main'));

/**
 * Children to append: null, undefined and false are left out, arrays flattened.
 * @param {Child[]} children
 */
function present(children) {
  /** @type {Array<Node | string | number | true>} */
  const out = [];
  /** @param {Child} c */
  const add = (c) => {
    if (Array.isArray(c)) c.forEach(add);
    else if (c !== null && c !== undefined && c !== false) out.push(c);
  };
  children.forEach(add);
  return out;
}

/**
 * Replaces the page's content.
 * @param {...Child} children
 */
export function show(...children) {
  main.replaceChildren(...present(children).map((c) => (c instanceof Node ? c : String(c))));
  settled();
}

/** Marks `<main>` as done loading (what `show` does after it replaces the content; for a page that adopted it). */
export function settled() {
  main.setAttribute('aria-busy', 'false');
}

/**
 * An element: attributes (`on*` are listeners; false/null/undefined are left out) and children (text or nodes).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown> | null} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), /** @type {EventListener} */ (v));
    else if (k === 'class') el.className = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of present(children)) el.append(c instanceof Node ? c : String(c));
  return el;
}

/**
 * A view's tree (src/gateway/views/) as DOM: the elements the server's markup of it parses to.
 * @param {VNode | string} node
 * @returns {Node}
 */
export function toDom(node) {
  if (typeof node === 'string') return document.createTextNode(node);
  return h(/** @type {keyof HTMLElementTagNameMap} */ (node.tag), node.attrs, node.children.map(toDom));
}

/**
 * Only http(s) URLs become links; anything else (javascript:, data:) is shown as text.
 * @param {string | null | undefined} url
 */
export function safeUrl(url) {
  try {
    const u = new URL(String(url));
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null;
  } catch {
    return null;
  }
}

/** @param {string} text */
export function signinLink(text) {
  return h('a', { href: `/signin?next=${encodeURIComponent(location.pathname + location.search)}` }, text);
}

/** @param {number} n */
const two = (n) => String(n).padStart(2, '0');

/**
 * A time as the reader's clock shows it, the way the server writes it in UTC: `2026-11-28 03:04 UTC+1`. Not
 * Intl.DateTimeFormat: building one loads locale data for ~60 ms of main thread, the page's longest task.
 * @param {string} iso
 */
export function when(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return h('time', { datetime: iso }, iso);
  const offset = -d.getTimezoneOffset();
  const [hours, minutes] = [Math.floor(Math.abs(offset) / 60), Math.abs(offset) % 60];
  const zone = offset ? `UTC${offset > 0 ? '+' : '-'}${hours}${minutes ? `:${two(minutes)}` : ''}` : 'UTC';
  const date = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  const shown = `${date} ${two(d.getHours())}:${two(d.getMinutes())} ${zone}`;
  return h('time', { datetime: iso }, shown);
}

/**
 * A wide table in a box that scrolls sideways on narrow screens (its words never broken), reachable by keyboard.
 * @param {string} label
 * @param {HTMLTableElement} table
 */
export function scrollBox(label, table) {
  return h('div', { class: 'scrollbox', role: 'region', 'aria-label': label, tabindex: 0 }, table);
}

export function alertBox() {
  return h('p', { class: 'alert', role: 'alert' });
}
/**
 * @param {HTMLElement} box
 * @param {string} text
 * @param {'error' | 'ok' | 'info'} [kind]
 */
export function say(box, text, kind = 'error') {
  box.className = `alert ${kind}`;
  box.textContent = text;
}

/** @param {string} text */
export function setTitle(text) {
  document.title = `${text} · pixvote`;
}
