// Building the pages: elements, text, the signed-in visitor. User text only ever becomes text nodes or attribute
// values: `h()` appends strings with `append()` (text), never through innerHTML, and links to user URLs pass
// `safeUrl()`.

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

/** @param {string | null | undefined} url */
export function hostOf(url) {
  try {
    return new URL(String(url)).host;
  } catch {
    return '';
  }
}

/** @param {string} text */
export function signinLink(text) {
  return h('a', { href: `/signin?next=${encodeURIComponent(location.pathname + location.search)}` }, text);
}

/** @type {Intl.DateTimeFormat | null} */
let dateFormat = null;
/** @param {string} iso */
export function when(iso) {
  const d = new Date(iso);
  // Made on first use: building a formatter costs more than the feed's first paint can spare.
  dateFormat ??= new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  return h('time', { datetime: iso }, Number.isNaN(d.getTime()) ? iso : dateFormat.format(d));
}

/**
 * @param {number} n
 * @param {string} one
 * @param {string} many
 */
export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
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
