// The moderators' page (`/moderation`): the open queue (reported or held uploads, vote rings) and users to ban.
import { api, explain } from '../lib/api.js';
import { card } from '../lib/cards.js';
import { alertBox, h, ME, plural, say, scrollBox, setTitle, show, when } from '../lib/dom.js';

export async function render() {
  setTitle('Moderation');
  if (!ME?.admin) {
    show(
      h('h1', {}, 'Moderation'),
      h(
        'p',
        {},
        'Only moderators can see this page. The ',
        h('a', { href: '/modlog' }, 'moderation log'),
        ' is public.',
      ),
    );
    return;
  }
  const queue = h('ol', { class: 'queue', 'aria-label': 'Moderation queue' });
  const queueStatus = h('p', { role: 'status' });
  const users = h('div');
  const q = h('input', { id: 'user-q', name: 'q', autocomplete: 'off' });
  const userForm = h(
    'form',
    { class: 'inline', role: 'search' },
    h('label', { for: 'user-q' }, 'Find users'),
    q,
    h('button', { type: 'submit' }, 'Search'),
  );
  userForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void loadUsers(users, q.value.trim());
  });
  show(
    h('h1', {}, 'Moderation'),
    h('h2', {}, 'Queue'),
    queueStatus,
    queue,
    h('h2', {}, 'Users and bans'),
    userForm,
    users,
  );

  // The queue a page at a time: "More of the queue" pages on by cursor, so items acted on meanwhile skip nothing.
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'More of the queue');
  queue.after(more);
  /** @param {string | null} cursor */
  const loadQueue = async (cursor) => {
    const r = await api('GET', `/api/admin/moderation?status=open&limit=50${cursor ? `&cursor=${cursor}` : ''}`);
    if (!r.ok) return void (queueStatus.textContent = explain(r));
    queue.append(
      ...r.data.items.map((/** @type {any} */ it) => (it.kind === 'vote_ring' ? voteRingItem(it) : queueItem(it))),
    );
    if (!cursor) queueStatus.textContent = r.data.items.length ? '' : 'The queue is empty.';
    more.hidden = !r.data.next_cursor;
    more.onclick = () => void loadQueue(r.data.next_cursor);
  };
  await loadQueue(null);
  await loadUsers(users, '');
}

/** A vote ring the detector found (API.md Moderation, "Vote rings"): its accounts, evidence, void or dismiss. */
/** @param {any} item */
function voteRingItem(item) {
  const e = item.evidence;
  const notice = alertBox();
  const reason = h('input', { id: `reason-${item.id}`, autocomplete: 'off' });
  // No thumbnail column: the ring's text takes the item's whole width.
  const li = h('li', { class: 'qitem ring' });
  /** @param {string} action */
  const act = async (action) => {
    const res = await api('POST', `/api/admin/vote-rings/${item.id}`, { action, reason: reason.value.trim() });
    if (!res.ok) return say(notice, explain(res));
    if (action === 'void') {
      // A void can be undone (VOTE_RING_RESTORE_DAYS): the one action left is to restore.
      say(notice, `Voided: ${plural(res.data.voided_votes, 'vote', 'votes')} out of the counts, kept.`, 'ok');
      for (const b of buttons) b.hidden = b.dataset.action !== 'restore';
    } else if (action === 'restore') {
      const skipped = res.data.skipped_votes ? ` (${res.data.skipped_votes} skipped: voted again, or upload gone)` : '';
      say(notice, `Restored: ${plural(res.data.restored_votes, 'vote', 'votes')} back${skipped}.`, 'ok');
      for (const b of buttons) b.hidden = true;
    } else say(notice, 'Dismissed.', 'ok');
  };
  const buttons = /** @type {const} */ ([
    ['void', 'Void their votes'],
    ['dismiss', 'Dismiss'],
    ['restore', 'Undo: restore their votes'],
  ]).map(([a, label]) => {
    const b = h(
      'button',
      { type: 'button', class: a === 'void' ? 'danger' : 'secondary', hidden: a === 'restore' },
      label,
    );
    b.dataset.action = a;
    b.addEventListener('click', () => void act(a));
    return b;
  });
  /** @param {number} x */
  const pct = (x) => `${Math.round(x * 100)} %`;
  li.append(
    h(
      'div',
      {},
      h(
        'p',
        {},
        h('span', { class: 'badge warn' }, 'vote ring'),
        ` ${plural(item.accounts.length, 'account', 'accounts')} voting ${e.direction} one ${e.target.type} · `,
        `${plural(e.votes, 'vote', 'votes')}, ${pct(e.target_share)} of the target's · ${e.young_accounts} young · `,
        `${pct(e.burst_share)} within an hour · score ${e.score}`,
      ),
      h('p', {}, item.accounts.map((/** @type {{ username: string }} */ u) => u.username).join(', ')),
      h('p', { class: 'inline' }, h('label', { for: `reason-${item.id}` }, 'Reason'), reason),
      h('p', { class: 'inline' }, ...buttons),
      notice,
    ),
  );
  return li;
}

/** @param {any} item */
function queueItem(item) {
  const u = item.upload;
  const notice = alertBox();
  const reason = h('input', { id: `reason-${u.id}`, autocomplete: 'off' });
  const block = h(
    'select',
    { id: `block-${u.id}` },
    h('option', { value: 'none' }, 'no'),
    h('option', { value: 'exact' }, 'this exact file'),
    h('option', { value: 'near' }, 'this and near copies'),
  );
  const state = h('span', { class: 'badge warn' }, u.moderation ?? 'visible');
  const li = h('li', { class: 'qitem' });
  /** @param {string} action */
  const act = async (action) => {
    /** @type {{ action: string, reason: string, block?: string }} */
    const body = { action, reason: reason.value.trim() || action };
    if (action === 'remove' && u.upload_type === 'image') body.block = block.value;
    const res = await api('POST', `/api/admin/uploads/${u.id}/moderation`, body);
    if (!res.ok) return say(notice, explain(res));
    state.textContent = res.data.moderation;
    say(
      notice,
      action === 'approve' ? 'Approved.' : action === 'hold' ? 'Held: hidden from everyone but its owner.' : 'Removed.',
      'ok',
    );
  };
  const buttons = /** @type {const} */ ([
    ['approve', 'Approve'],
    ['hold', 'Hold'],
    ['remove', 'Remove'],
  ]).map(([a, label]) => {
    const b = h(
      'button',
      { type: 'button', class: a === 'remove' ? 'danger' : a === 'hold' ? 'secondary' : '' },
      label,
    );
    b.setAttribute('aria-label', `${label} the upload by ${u.username}`);
    b.addEventListener('click', () => void act(a));
    return b;
  });
  const reasons = Object.entries(item.reports?.reasons ?? {}).map(([k, n]) => `${k} ×${n}`);
  const preview = /** @type {HTMLElement} */ (card(u, false).firstChild);
  drawPersonBoxes(preview, item.human_boxes);
  li.append(
    h('div', { class: 'qthumb' }, preview),
    h(
      'div',
      {},
      h(
        'p',
        {},
        state,
        ' by ',
        u.username,
        ' · ',
        plural(item.reports?.count ?? 0, 'report', 'reports'),
        reasons.length ? ` (${reasons.join(', ')})` : '',
        // How many reporters the report-trust rule counts (only they hold an upload automatically).
        item.reports?.count ? ` · ${item.reports.trusted ?? 0} trusted` : '',
        item.person_flag ? personNote(item) : '',
      ),
      (item.reports?.notes ?? []).length
        ? h(
            'ul',
            { class: 'notes' },
            item.reports.notes.map((/** @type {string} */ n) => h('li', {}, n)),
          )
        : null,
      h('p', { class: 'inline' }, h('label', { for: `reason-${u.id}` }, 'Reason'), reason),
      u.upload_type === 'image'
        ? h('p', { class: 'inline' }, h('label', { for: `block-${u.id}` }, 'On remove, also block'), block)
        : null,
      h('p', { class: 'actions' }, buttons),
      notice,
    ),
  );
  return li;
}

/**
 * What person detection said, for an item it queued: its score, and how many boxes the preview outlines.
 * @param {any} item
 */
function personNote(item) {
  const score = typeof item.human_score === 'number' ? ` (score ${item.human_score.toFixed(2)})` : '';
  const boxes = item.human_boxes?.length ? `, ${plural(item.human_boxes.length, 'box', 'boxes')} outlined` : '';
  return ` · person detected${score}${boxes}`;
}

/**
 * Outlines the person detector's boxes over the preview's image. Only the best box carries its score as a label (on
 * an 8 rem preview, labels of boxes close together covered each other); every box has its score as a tooltip. The
 * boxes are fractions of the image, set through the style API (the CSP allows no inline style attribute in markup).
 * @param {HTMLElement} preview the card's link, holding the thumbnail
 * @param {Array<{ x: number, y: number, width: number, height: number, score: number }> | null | undefined} boxes
 */
function drawPersonBoxes(preview, boxes) {
  const img = preview.querySelector('img');
  if (!img || !boxes?.length) return;
  const frame = h('span', { class: 'personframe' });
  img.replaceWith(frame);
  frame.append(img);
  // The first of the best-scoring boxes.
  const best = boxes.reduce((top, b) => (b.score > top.score ? b : top));
  for (const b of boxes) {
    const score = b.score.toFixed(2);
    const box = h(
      'span',
      { class: 'personbox', title: `person ${score}` },
      b === best ? h('span', { class: 'score' }, score) : null,
    );
    box.style.left = `${b.x * 100}%`;
    box.style.top = `${b.y * 100}%`;
    box.style.width = `${b.width * 100}%`;
    box.style.height = `${b.height * 100}%`;
    frame.append(box);
  }
}

/**
 * @param {HTMLElement} box
 * @param {string} q
 */
async function loadUsers(box, q) {
  const r = await api('GET', `/api/admin/users?limit=20${q ? `&q=${encodeURIComponent(q)}` : ''}`);
  if (!r.ok) return box.replaceChildren(h('p', { class: 'alert error' }, explain(r)));
  const notice = alertBox();
  const rows = r.data.users.map((/** @type {any} */ u) => {
    const status = h(
      'td',
      {},
      u.banned_until
        ? u.banned_until === 'permanent'
          ? 'banned for good'
          : ['banned until ', when(u.banned_until)]
        : 'active',
    );
    const cell = h('td');
    const render = () => {
      if (u.role === 'admin') return cell.replaceChildren('moderator');
      if (u.banned_until) {
        const unban = h('button', { type: 'button', class: 'secondary' }, 'Unban');
        unban.setAttribute('aria-label', `Unban ${u.username}`);
        unban.addEventListener('click', async () => {
          const res = await api('DELETE', `/api/admin/users/${u.id}/ban`);
          if (!res.ok) return say(notice, explain(res));
          u.banned_until = null;
          status.textContent = 'active';
          render();
        });
        return cell.replaceChildren(unban);
      }
      const days = h(
        'select',
        { 'aria-label': `Ban length for ${u.username}` },
        [1, 7, 30].map((d) => h('option', { value: d }, plural(d, 'day', 'days'))),
        h('option', { value: 'permanent' }, 'permanently'),
      );
      const why = h('input', {
        'aria-label': `Reason to ban ${u.username}`,
        placeholder: 'reason',
        autocomplete: 'off',
      });
      const ban = h('button', { type: 'button', class: 'danger' }, 'Ban');
      ban.setAttribute('aria-label', `Ban ${u.username}`);
      ban.addEventListener('click', async () => {
        const until =
          days.value === 'permanent' ? null : new Date(Date.now() + Number(days.value) * 86_400_000).toISOString();
        const res = await api('POST', `/api/admin/users/${u.id}/ban`, {
          reason: why.value.trim() || 'banned',
          until,
          remove_uploads: false,
        });
        if (!res.ok) return say(notice, explain(res));
        u.banned_until = res.data.banned_until;
        status.replaceChildren(
          ...[
            u.banned_until === 'permanent' || !u.banned_until
              ? 'banned for good'
              : ['banned until ', when(u.banned_until)],
          ].flat(),
        );
        render();
      });
      cell.replaceChildren(days, ' ', why, ' ', ban);
    };
    render();
    return h('tr', {}, h('td', {}, u.username), h('td', {}, u.uploads), h('td', {}, u.reports_received), status, cell);
  });
  box.replaceChildren(
    notice,
    rows.length
      ? scrollBox(
          'Users',
          h(
            'table',
            { class: 'users' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['User', 'Uploads', 'Reports', 'Status'].map((t) => h('th', { scope: 'col' }, t)),
                h('td'),
              ),
            ),
            h('tbody', {}, rows),
          ),
        )
      : h('p', {}, 'No users found.'),
  );
}
