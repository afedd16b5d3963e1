// The profile's API tokens: the list, revoking one, and a new one shown once.
import { api, explain } from '../lib/api.js';
import { ME, alertBox, h, say, scrollBox, when } from '../lib/dom.js';
import { limits } from '../lib/limits.js';

/**
 * @typedef {{ id: string, name: string, created_at: string, last_used_at: string | null, scopes?: string[],
 *   expires_at?: string | null }} Token
 */

/** The scopes a token may have (API.md Auth, Scopes), with what each allows; `moderate` only for admins. */
const SCOPES = [
  ['upload', 'Upload', 'create uploads and the pre-check'],
  ['vote', 'Vote', 'vote on uploads'],
  ['read', 'Read', 'your profile and private uploads'],
  ['manage', 'Manage', 'privacy, tags, deleting, reports and API tokens'],
  ['moderate', 'Moderate', 'the moderators’ /api/admin routes'],
].filter(([scope]) => scope !== 'moderate' || ME?.admin);

/** How long a new token works: `expires_in`, or never. */
const EXPIRIES = [
  ['', 'Never'],
  ['30d', 'In 30 days'],
  ['90d', 'In 90 days'],
  ['365d', 'In 1 year'],
];

/** @param {Token[]} initial */
export function tokenSection(initial) {
  const notice = alertBox();
  const rows = h('tbody');
  const table = h(
    'table',
    { class: 'tokens' },
    h('caption', { class: 'sr' }, 'Your API tokens'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'Name'),
        h('th', { scope: 'col' }, 'Created'),
        h('th', { scope: 'col' }, 'Last used'),
        h('th', { scope: 'col' }, 'Scopes'),
        h('th', { scope: 'col' }, 'Expires'),
        h('td'),
      ),
    ),
    rows,
  );
  const empty = h('p', {}, 'No API tokens.');
  /** @param {Token[]} list */
  const refresh = (list) => {
    rows.replaceChildren(
      ...list.map((t) => {
        const revoke = h('button', { type: 'button', class: 'danger' }, 'Revoke');
        revoke.setAttribute('aria-label', `Revoke ${t.name}`);
        const row = h(
          'tr',
          {},
          h('td', {}, t.name),
          h('td', {}, when(t.created_at)),
          h('td', {}, t.last_used_at ? when(t.last_used_at) : 'never'),
          h('td', {}, t.scopes?.join(', ') ?? ''),
          h('td', {}, t.expires_at ? when(t.expires_at) : 'never'),
          h('td', {}, revoke),
        );
        revoke.addEventListener('click', async () => {
          const r = await api('DELETE', `/api/auth/tokens/${encodeURIComponent(t.id)}`);
          if (!r.ok) return say(notice, explain(r));
          row.remove();
          table.hidden = rows.children.length === 0;
          empty.hidden = !table.hidden;
          say(notice, `Token “${t.name}” revoked: it no longer works.`, 'ok');
        });
        return row;
      }),
    );
    table.hidden = list.length === 0;
    empty.hidden = !table.hidden;
  };
  refresh(initial);

  const name = h('input', {
    id: 'token-name',
    name: 'name',
    required: true,
    maxlength: limits.maxTokenName,
    autocomplete: 'off',
  });
  const boxes = SCOPES.map(([scope, label, means]) => {
    const box = /** @type {HTMLInputElement} */ (
      h('input', { type: 'checkbox', id: `token-scope-${scope}`, name: 'scopes', value: scope, checked: true })
    );
    return { scope, box, label: h('label', { for: box.id, title: means }, box, ` ${label}`) };
  });
  const scopes = h('fieldset', { class: 'scopes' }, h('legend', {}, 'It may'), ...boxes.map((b) => b.label));
  const expiry = /** @type {HTMLSelectElement} */ (
    h(
      'select',
      { id: 'token-expiry', name: 'expires_in' },
      ...EXPIRIES.map(([v, text]) => h('option', { value: v }, text)),
    )
  );
  const shown = h('div', { class: 'secret', hidden: true });
  const form = h(
    'form',
    { class: 'inline' },
    h('label', { for: 'token-name' }, 'New token name'),
    name,
    scopes,
    h('label', { for: 'token-expiry' }, 'Expires'),
    expiry,
    h('button', { type: 'submit' }, 'Create token'),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!name.value.trim()) return say(notice, 'Give the token a name.');
    const chosen = boxes.filter((b) => b.box.checked).map((b) => b.scope);
    if (!chosen.length) return say(notice, 'Choose at least one thing the token may do.');
    /** @type {Record<string, unknown>} */
    const body = { name: name.value.trim() };
    // Every box checked: the token has every scope you have, now and later (no `scopes` sent).
    if (chosen.length < boxes.length) body.scopes = chosen;
    if (expiry.value) body.expires_in = expiry.value;
    const r = await api('POST', '/api/auth/tokens/generate', body);
    if (!r.ok) return say(notice, explain(r));
    name.value = '';
    const token = /** @type {string} */ (r.data.token);
    const value = h('input', { id: 'new-token', readonly: true, value: token, class: 'mono' });
    const copy = h('button', { type: 'button' }, 'Copy');
    const copied = h('span', { role: 'status' });
    copy.addEventListener('click', async () => {
      value.select();
      try {
        await navigator.clipboard.writeText(token);
        copied.textContent = 'Copied.';
      } catch {
        copied.textContent = 'Press Ctrl+C (or ⌘C) to copy the selected token.';
      }
    });
    shown.replaceChildren(
      h('p', {}, h('label', { for: 'new-token' }, 'Your new token. Copy it now: it is not shown again.')),
      value,
      ' ',
      copy,
      ' ',
      copied,
    );
    shown.hidden = false;
    value.focus();
    value.select();
    const list = await api('GET', '/api/auth/tokens');
    if (list.ok) refresh(list.data.tokens);
  });
  return h(
    'section',
    { class: 'tokenbox' },
    h('h2', {}, 'API tokens'),
    h(
      'p',
      { class: 'hint' },
      'For the command line and scripts: send it as Authorization: Bearer <token>. ' +
        'A token may do only what you allow it; one that expires stops working then.',
    ),
    form,
    shown,
    notice,
    scrollBox('Your API tokens', table),
    empty,
  );
}
