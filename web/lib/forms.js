// Form parts the pages share: labelled fields and live counters against the server's limits.
import { h } from './dom.js';
import { limits } from './limits.js';

/**
 * A labelled input in a paragraph.
 * @param {string} id
 * @param {string} label
 * @param {Record<string, unknown>} attrs
 */
export function field(id, label, attrs) {
  return h('p', { class: 'field' }, h('label', { for: id }, label), h('input', { id, name: id, ...attrs }));
}

/**
 * A live counter for an input, over its limit shown as such.
 * @param {HTMLInputElement | HTMLTextAreaElement} input
 * @param {number} limit
 * @param {(value: string) => { n: number, over?: boolean, text?: string }} describe
 */
export function counter(input, limit, describe) {
  const out = h('span', { class: 'counter', id: `${input.id}-count` });
  const update = () => {
    const { n, over, text } = describe(input.value);
    out.textContent = text ?? `${n} / ${limit}`;
    out.classList.toggle('over', over ?? n > limit);
  };
  input.setAttribute('aria-describedby', out.id);
  input.addEventListener('input', update);
  update();
  return out;
}

/**
 * Characters typed (code points, as the API counts them: an emoji is one), against a limit.
 * @param {HTMLInputElement | HTMLTextAreaElement} input
 * @param {number} limit
 */
export function lengthCounter(input, limit) {
  return counter(input, limit, (v) => ({ n: [...v].length }));
}

/** @param {string} text */
export function splitTags(text) {
  return text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}

/** A tag as its slug, as the server folds it. @param {string} tag */
function slugOf(tag) {
  return tag.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-');
}

/**
 * The tags an upload would have, against the limit: those it has (`existing`, for the upload page's tag editor)
 * and those typed, each counted once.
 * @param {HTMLInputElement} input
 * @param {() => ReadonlyArray<{ slug: string }>} [existing]
 */
export function tagsCounter(input, existing = () => []) {
  const { maxTags, maxTagLength } = limits;
  return counter(input, maxTags, (v) => {
    const tags = splitTags(v);
    const long = tags.find((t) => t.length > maxTagLength);
    const n = new Set([...existing().map((t) => t.slug), ...tags.map(slugOf)]).size;
    return {
      n,
      over: n > maxTags || Boolean(long),
      text: long ? `“${long.slice(0, 12)}…” is over ${maxTagLength} characters` : `${n} / ${maxTags} tags`,
    };
  });
}
