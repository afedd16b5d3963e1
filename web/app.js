// pixvote's pages: one vanilla ES module, no build step. The server sends each page as a small HTML shell
// (src/gateway/routes/web.routes.ts) naming the page and the signed-in visitor; this module renders it from the
// public API and does every write through it. User text only ever becomes text nodes or attribute values:
// `h()` appends strings with `append()` (text), never through innerHTML, and links to user URLs pass `safeUrl()`.
import { thumbHashToDataURL } from './thumbhash.js';

const body = document.body;
const ME = body.dataset.user
  ? { username: body.dataset.user, id: body.dataset.userId, admin: body.dataset.role === 'admin' }
  : null;
const main = document.getElementById('main');

/** Replaces the page's content (null and false children are left out). */
function show(...children) {
  main.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  main.setAttribute('aria-busy', 'false');
}

// ---------------------------------------------------------------------------------------------------- helpers

/** An element: attributes (`on*` are listeners; false/null/undefined are left out) and children (text or nodes). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** Only http(s) URLs become links; anything else (javascript:, data:) is shown as text. */
function safeUrl(url) {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null;
  } catch {
    return null;
  }
}

function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

/**
 * A same-origin path to go back to after signing in, judged as the browser will read it: resolved by the URL
 * parser itself (which drops tabs and newlines and reads a backslash as `/`, so `/<tab>/evil.example` is another host),
 * and kept only when it stays on this origin.
 */
function nextPath() {
  const next = new URLSearchParams(location.search).get('next') ?? '/';
  if (!next.startsWith('/')) return '/';
  const url = new URL(next, location.origin);
  return url.origin === location.origin ? url.pathname + url.search + url.hash : '/';
}

function signinLink(text) {
  return h('a', { href: `/signin?next=${encodeURIComponent(location.pathname + location.search)}` }, text);
}

let dateFormat = null;
function when(iso) {
  const d = new Date(iso);
  // Made on first use: building a formatter costs more than the feed's first paint can spare.
  dateFormat ??= new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  return h('time', { datetime: iso }, Number.isNaN(d.getTime()) ? iso : dateFormat.format(d));
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

function formatWait(seconds) {
  if (!Number.isFinite(seconds) || seconds <= 0) return 'a moment';
  if (seconds < 60) return plural(Math.ceil(seconds), 'second', 'seconds');
  if (seconds < 3600) return plural(Math.ceil(seconds / 60), 'minute', 'minutes');
  return plural(Math.ceil(seconds / 3600), 'hour', 'hours');
}

/** Calls the public API with the visitor's cookie; never throws (a network failure is status 0). */
async function api(method, path, json) {
  const init = { method, headers: {}, cache: 'no-cache', credentials: 'same-origin' };
  if (json !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(json);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    return { ok: false, status: 0, data: { error: 'network' }, retryAfter: null };
  }
  // An empty or non-JSON body (a 304 answered from the cache never gets here) is null.
  const data = await res.json().catch(() => null);
  return { ok: res.ok, status: res.status, data, retryAfter: res.headers.get('retry-after') };
}

/** An API refusal in plain words. */
function explain(r) {
  const code = r.data?.error;
  const wait = r.retryAfter ? formatWait(Number(r.retryAfter)) : null;
  switch (code) {
    case 'network':
      return 'The server could not be reached. Check your connection and try again.';
    case 'rate_limited':
      return `You are doing that too often. Please wait ${wait ?? 'a while'} and try again.`;
    case 'human_detected':
      return 'This image seems to show a person. pixvote does not accept pictures of people.';
    case 'blocked_content':
      return 'This image is blocked by the moderators and cannot be uploaded.';
    case 'payload_too_large':
      return 'The file is too large: images can be at most 10 MB.';
    case 'unsupported_format':
      return 'That file is not an image pixvote can take: use JPEG, PNG, GIF or WebP.';
    case 'invalid_image':
      return 'The image could not be read: it may be damaged, or too big (over 50 megapixels or 200 frames).';
    case 'fetch_failed':
      return 'The image at that address could not be fetched. Check that the URL leads straight to an image.';
    case 'unauthorized':
      return 'You need to sign in again.';
    case 'forbidden':
      return 'You are not allowed to do that.';
    case 'conflict':
      return 'That username or email is already taken.';
    case 'busy':
    case 'storage_unavailable':
      return `The server is busy right now. Please try again in ${wait ?? 'a moment'}.`;
    case 'not_found':
      return 'It is not there any more.';
    case 'removed':
      return 'The moderators removed it.';
    default:
      // The API's message names the field and the limit ("description is 612 characters; the limit is 500").
      return r.data?.message ?? `Something went wrong (HTTP ${r.status}). Please try again.`;
  }
}

function alertBox() {
  return h('p', { class: 'alert', role: 'alert' });
}
function say(box, text, kind = 'error') {
  box.className = `alert ${kind}`;
  box.textContent = text;
}

function setTitle(text) {
  document.title = `${text} · pixvote`;
}

/**
 * The ThumbHash placeholder as the image's background until its bytes arrive. Decoded after the images are in
 * the document (their requests go first), and only for those still loading.
 */
function placeholder(img, hash) {
  if (!hash) return;
  setTimeout(() => paintPlaceholder(img, hash), 0);
}
function paintPlaceholder(img, hash) {
  if (img.complete && img.naturalWidth > 0) return;
  try {
    const bytes = Uint8Array.from(atob(hash), (c) => c.charCodeAt(0));
    img.style.backgroundImage = `url("${thumbHashToDataURL(bytes)}")`;
    img.addEventListener('load', () => img.style.removeProperty('background-image'), { once: true });
  } catch {
    // A malformed hash only costs the placeholder.
  }
}

function fit(width, height, max) {
  const scale = Math.min(1, max / Math.max(width, height, 1));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

function counts(u) {
  return [
    h(
      'span',
      { class: 'up', title: 'upvotes' },
      '▲ ',
      h('span', { class: 'n-up' }, u.upvotes),
      h('span', { class: 'sr' }, ' upvotes'),
    ),
    h(
      'span',
      { class: 'down', title: 'downvotes' },
      '▼ ',
      h('span', { class: 'n-down' }, u.downvote_count),
      h('span', { class: 'sr' }, ' downvotes'),
    ),
  ];
}

function tagList(tags) {
  if (!tags?.length) return null;
  return h(
    'ul',
    { class: 'tags', 'aria-label': 'Tags' },
    tags.map((t) => h('li', {}, h('a', { href: `/?tag=${encodeURIComponent(t.slug)}` }, t.name))),
  );
}

function titleOf(u) {
  if (u.description) return u.description.length > 90 ? `${u.description.slice(0, 89)}…` : u.description;
  if (u.upload_type === 'link') return hostOf(u.external_url) || 'Link';
  return u.original_name || 'Untitled image';
}

/** A feed or profile card: thumbnail (or link card), title, counts, tags. */
function card(u, eager) {
  let media;
  if (u.upload_type === 'image' && u.image) {
    const size = fit(u.image.width, u.image.height, 320);
    media = h('img', {
      src: u.image.thumbnail_url,
      alt: u.description || u.original_name || 'Image',
      width: size.width,
      height: size.height,
      loading: eager ? 'eager' : 'lazy',
      fetchpriority: eager ? 'high' : null,
      decoding: 'async',
    });
    placeholder(media, u.image.thumbhash);
  } else {
    media = h(
      'span',
      { class: 'linkcard' },
      h('span', { class: 'provider' }, u.embed?.provider ?? 'link'),
      h('span', { class: 'host' }, hostOf(u.external_url)),
    );
  }
  return h(
    'li',
    { class: 'card' },
    h(
      'a',
      { class: 'cardlink', href: `/uploads/${encodeURIComponent(u.id)}` },
      media,
      h('span', { class: 'title' }, titleOf(u)),
    ),
    h(
      'p',
      { class: 'meta' },
      counts(u),
      u.is_private ? h('span', { class: 'badge' }, 'Private') : null,
      u.moderation && u.moderation !== 'visible' ? h('span', { class: 'badge warn' }, u.moderation) : null,
      h('span', { class: 'by' }, 'by ', u.username),
    ),
    tagList(u.tags),
  );
}

// ------------------------------------------------------------------------------------------------------ feed

const SORTS = [
  ['new', 'New'],
  ['top', 'Top'],
  ['hot', 'Hot'],
  ['best', 'Best'],
];
const PAGE_SIZE = 24;

function slugify(tag) {
  return tag.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-');
}

function feedUrl({ sort, tag, page }) {
  const q = new URLSearchParams();
  if (sort && sort !== 'new') q.set('sort', sort);
  if (tag) q.set('tag', tag);
  if (page && page > 1) q.set('page', String(page));
  const s = q.toString();
  return s ? `/?${s}` : '/';
}

async function feedPage() {
  const params = new URLSearchParams(location.search);
  const sort = SORTS.some(([s]) => s === params.get('sort')) ? params.get('sort') : 'new';
  const tag = slugify(params.get('tag') ?? '');
  const first = Math.max(1, Number.parseInt(params.get('page') ?? '1', 10) || 1);

  const grid = h('ol', { class: 'grid', 'aria-label': 'Uploads' });
  const status = h('p', { class: 'status', role: 'status' });
  const more = h(
    'a',
    { class: 'more button', href: feedUrl({ sort, tag, page: first + 1 }), hidden: true },
    'More uploads',
  );
  show(
    h('h1', {}, tag ? `Uploads tagged “${tag}”` : 'Latest uploads'),
    h(
      'div',
      { class: 'controls' },
      h(
        'nav',
        { class: 'sorts', 'aria-label': 'Sort' },
        SORTS.map(([s, label]) =>
          h('a', { href: feedUrl({ sort: s, tag }), 'aria-current': s === sort ? 'page' : null }, label),
        ),
      ),
      h(
        'form',
        { class: 'tagfilter', role: 'search', action: '/', method: 'get' },
        h('label', { for: 'tag-filter' }, 'Tag'),
        h('input', { id: 'tag-filter', name: 'tag', value: tag, maxlength: 32, autocomplete: 'off' }),
        sort !== 'new' ? h('input', { type: 'hidden', name: 'sort', value: sort }) : null,
        h('button', { type: 'submit' }, 'Filter'),
        tag ? h('a', { href: feedUrl({ sort }) }, 'All tags') : null,
      ),
    ),
    first > 1 ? h('p', {}, h('a', { href: feedUrl({ sort, tag, page: first - 1 }) }, '← Newer page')) : null,
    grid,
    status,
    more,
  );

  let next = first;
  let loading = false;
  async function load(focusFirst) {
    if (loading) return;
    loading = true;
    status.textContent = 'Loading…';
    const q = new URLSearchParams({ page: String(next), limit: String(PAGE_SIZE), sort });
    if (tag) q.set('tag', tag);
    // The first page may come with the document: the same bytes GET /api/uploads answers for this query.
    const embedded = document.getElementById('first-page');
    const r =
      next === first && embedded?.dataset.query === q.toString()
        ? { ok: true, status: 200, data: JSON.parse(embedded.textContent) }
        : await api('GET', `/api/uploads?${q}`);
    loading = false;
    if (!r.ok) {
      status.textContent = explain(r);
      return;
    }
    const eager = next === first;
    const cards = r.data.uploads.map((u, i) => card(u, eager && i < 6));
    grid.append(...cards);
    if (next > first) history.replaceState(null, '', feedUrl({ sort, tag, page: next }));
    if (focusFirst && cards[0]) cards[0].querySelector('a')?.focus();
    next += 1;
    more.href = feedUrl({ sort, tag, page: next });
    more.hidden = !r.data.has_more;
    status.textContent =
      grid.children.length === 0
        ? tag
          ? 'No uploads with this tag yet.'
          : 'Nothing here yet: be the first to upload.'
        : '';
  }
  more.addEventListener('click', (e) => {
    e.preventDefault();
    void load(true);
  });
  await load(false);
  // Scrolling near the end loads the next page (its own URL replaces the address).
  if ('IntersectionObserver' in window) {
    new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting) && !more.hidden) void load(false);
      },
      { rootMargin: '600px' },
    ).observe(more);
  }
}

// ----------------------------------------------------------------------------------------------- upload page

const REASONS = ['spam', 'harassment', 'sexual', 'violence', 'illegal', 'copyright', 'other'];

function counter(input, limit, describe) {
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

function splitTags(text) {
  return text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}

function tagsCounter(input) {
  return counter(input, 10, (v) => {
    const tags = splitTags(v);
    const long = tags.find((t) => t.length > 32);
    return {
      n: tags.length,
      over: tags.length > 10 || Boolean(long),
      text: long ? `“${long.slice(0, 12)}…” is over 32 characters` : `${tags.length} / 10 tags`,
    };
  });
}

async function uploadPage() {
  const id = decodeURIComponent(location.pathname.split('/')[2] ?? '');
  const r = await api('GET', `/api/upload/${encodeURIComponent(id)}`);
  if (!r.ok) {
    const gone = r.status === 410;
    setTitle(gone ? 'Removed' : 'Not found');
    show(
      h('h1', {}, gone ? 'This upload was removed' : 'Upload not found'),
      h('p', {}, gone ? 'The moderators removed this upload.' : explain(r)),
      h('p', {}, h('a', { href: '/' }, 'Back to the feed')),
    );
    return;
  }
  renderUpload(r.data);
}

function renderUpload(u) {
  setTitle(titleOf(u));
  const mine = ME && (ME.id === u.user_id || ME.admin);
  const notice = alertBox();

  let media;
  if (u.upload_type === 'image' && u.image) {
    const size = fit(u.image.width, u.image.height, 1024);
    const img = h('img', {
      src: `${u.image.url}?size=medium`,
      alt: u.description || u.original_name || 'Image',
      width: size.width,
      height: size.height,
      fetchpriority: 'high',
    });
    placeholder(img, u.image.thumbhash);
    const full = h('button', { type: 'button', class: 'secondary' }, 'Show full size');
    full.addEventListener('click', () => {
      img.src = `${u.image.url}?size=full`;
      full.replaceWith(h('a', { href: `${u.image.url}?size=full` }, 'Open the full-size image'));
    });
    media = h('figure', { class: 'media' }, img, h('figcaption', {}, u.original_name ?? '', ' ', full));
  } else {
    const href = safeUrl(u.external_url);
    const embedBox = h('div', { class: 'embed' });
    const embedUrl = safeUrl(u.embed?.embed_url);
    if (embedUrl) {
      const provider = u.embed.provider ?? 'external';
      const load = h('button', { type: 'button' }, `Load the ${provider} embed`);
      load.addEventListener('click', () => {
        embedBox.replaceChildren(
          h('iframe', {
            src: embedUrl,
            title: `${provider} embed`,
            sandbox: 'allow-scripts allow-same-origin allow-popups allow-presentation',
            allow: 'encrypted-media; picture-in-picture; fullscreen',
            referrerpolicy: 'strict-origin-when-cross-origin',
          }),
        );
      });
      embedBox.append(h('p', {}, `Nothing from ${hostOf(embedUrl)} loads until you ask. `), load);
    }
    media = h(
      'div',
      { class: 'media link' },
      h(
        'p',
        {},
        'Link: ',
        href ? h('a', { href, rel: 'noopener noreferrer nofollow ugc' }, u.external_url) : u.external_url,
      ),
      embedBox,
    );
  }

  // Votes: the buttons show the viewer's own vote (aria-pressed); pressing the pressed one retracts it.
  const up = h('span', { class: 'n-up' }, u.upvotes);
  const down = h('span', { class: 'n-down' }, u.downvote_count);
  const voteButtons = [];
  let votes;
  if (ME) {
    const vote = async (value, button) => {
      const pressed = button.getAttribute('aria-pressed') === 'true';
      const r = await api('POST', '/api/vote', { uploadId: u.id, vote: pressed ? 'none' : value });
      if (!r.ok) return say(notice, explain(r));
      up.textContent = r.data.upvotes;
      down.textContent = r.data.downvote_count;
      voteButtons[0].setAttribute('aria-pressed', String(r.data.vote === 'fucks'));
      voteButtons[1].setAttribute('aria-pressed', String(r.data.vote === 'does_not_fuck'));
    };
    for (const [value, label] of [
      ['fucks', 'Upvote'],
      ['does_not_fuck', 'Downvote'],
    ]) {
      const b = h(
        'button',
        { type: 'button', class: `vote ${value}`, 'aria-pressed': String(u.my_vote === value) },
        label,
      );
      b.addEventListener('click', () => void vote(value, b));
      voteButtons.push(b);
    }
    votes = h('div', { class: 'votes', role: 'group', 'aria-label': 'Your vote' }, voteButtons);
  } else {
    votes = h('p', { class: 'votes' }, signinLink('Sign in to vote'));
  }

  const tags = h('div', { class: 'tagbox' }, tagList(u.tags));
  const owner = mine ? ownerTools(u, tags, notice) : null;
  const report = ME ? reportForm(u) : null;

  show(
    h(
      'article',
      { class: 'upload' },
      media,
      h(
        'div',
        { class: 'about' },
        h('h1', {}, 'Upload by ', u.username),
        u.description ? h('p', { class: 'description' }, u.description) : null,
        h(
          'p',
          { class: 'meta' },
          when(u.created_at),
          u.is_private ? h('span', { class: 'badge' }, 'Private') : null,
          u.moderation && u.moderation !== 'visible' ? h('span', { class: 'badge warn' }, u.moderation) : null,
        ),
        h('p', { class: 'counts', 'aria-live': 'polite' }, '▲ ', up, ' upvotes · ▼ ', down, ' downvotes'),
        votes,
        tags,
        notice,
        owner,
        report,
      ),
    ),
  );
}

function ownerTools(u, tagsBox, notice) {
  const priv = h('input', { type: 'checkbox', id: 'private', checked: u.is_private });
  priv.addEventListener('change', async () => {
    priv.disabled = true;
    const r = await api('PATCH', `/api/upload/${u.id}/privacy`, { is_private: priv.checked });
    priv.disabled = false;
    if (!r.ok) {
      priv.checked = !priv.checked;
      return say(notice, explain(r));
    }
    priv.checked = r.data.is_private;
    say(
      notice,
      r.data.is_private ? 'Now private: only people with the link can see it.' : 'Now public: it shows in the feed.',
      'ok',
    );
  });

  const tagInput = h('input', { id: 'add-tags', name: 'tags', autocomplete: 'off', placeholder: 'cats, cute' });
  const tagForm = h(
    'form',
    { class: 'inline' },
    h('label', { for: 'add-tags' }, 'Add tags'),
    tagInput,
    tagsCounter(tagInput),
    h('button', { type: 'submit' }, 'Add'),
  );
  tagForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const tags = splitTags(tagInput.value);
    if (!tags.length) return;
    const r = await api('POST', `/api/uploads/${u.id}/tags`, { tags });
    if (!r.ok) return say(notice, explain(r));
    tagInput.value = '';
    tagInput.dispatchEvent(new Event('input'));
    tagsBox.replaceChildren(tagList(r.data.tags) ?? '');
    say(notice, 'Tags added.', 'ok');
  });

  const confirmBox = h('div', { class: 'confirm', hidden: true });
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete upload…');
  del.addEventListener('click', () => {
    const yes = h('button', { type: 'button', class: 'danger' }, 'Yes, delete it');
    const no = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
    yes.addEventListener('click', async () => {
      const r = await api('DELETE', `/api/upload/${u.id}`);
      if (!r.ok) return say(notice, explain(r));
      location.assign('/profile');
    });
    no.addEventListener('click', () => {
      confirmBox.hidden = true;
      del.focus();
    });
    confirmBox.replaceChildren(h('p', {}, 'Delete this upload for good? Its votes and tags go with it.'), yes, ' ', no);
    confirmBox.hidden = false;
    no.focus();
  });

  return h(
    'section',
    { class: 'owner', 'aria-label': 'Your upload' },
    h('h2', {}, 'Manage'),
    h('p', {}, priv, ' ', h('label', { for: 'private' }, 'Private (only people with the link can see it)')),
    tagForm,
    h('p', {}, del),
    confirmBox,
  );
}

function reportForm(u) {
  const reason = h(
    'select',
    { id: 'report-reason', name: 'reason' },
    REASONS.map((r) => h('option', { value: r }, r)),
  );
  const note = h('textarea', { id: 'report-note', name: 'note', rows: 2 });
  const done = alertBox();
  const form = h(
    'form',
    { class: 'report' },
    h('label', { for: 'report-reason' }, 'Reason'),
    reason,
    h('label', { for: 'report-note' }, 'Note (optional)'),
    note,
    counter(note, 500, (v) => ({ n: v.length })),
    h('button', { type: 'submit' }, 'Send report'),
    done,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const r = await api('POST', `/api/upload/${u.id}/report`, {
      reason: reason.value,
      ...(note.value ? { note: note.value } : {}),
    });
    if (!r.ok) return say(done, explain(r));
    say(done, 'Thank you: the moderators will look at it.', 'ok');
  });
  return h('details', { class: 'reportbox' }, h('summary', {}, 'Report this upload'), form);
}

// ------------------------------------------------------------------------------------------------- auth pages

function field(id, label, attrs) {
  return h('p', { class: 'field' }, h('label', { for: id }, label), h('input', { id, name: id, ...attrs }));
}

function authPage(register) {
  setTitle(register ? 'Sign up' : 'Sign in');
  if (ME) {
    show(
      h('h1', {}, 'You are signed in'),
      h('p', {}, 'Signed in as ', ME.username, '. ', h('a', { href: '/' }, 'Go to the feed')),
    );
    return;
  }
  const notice = alertBox();
  const form = h(
    'form',
    { class: 'auth', novalidate: true },
    register
      ? [
          field('username', 'Username', {
            autocomplete: 'username',
            required: true,
            pattern: '[A-Za-z0-9_]{3,32}',
            'aria-describedby': 'username-hint',
          }),
          h('p', { class: 'hint', id: 'username-hint' }, '3–32 letters, digits or _'),
          field('email', 'Email', { type: 'email', autocomplete: 'email', required: true }),
        ]
      : field('login', 'Email or username', { autocomplete: 'username', required: true }),
    field('password', 'Password', {
      type: 'password',
      autocomplete: register ? 'new-password' : 'current-password',
      required: true,
      minlength: 8,
    }),
    h('button', { type: 'submit' }, register ? 'Create account' : 'Sign in'),
    notice,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const v = (name) => form.elements.namedItem(name).value;
    let payload;
    if (register) {
      payload = {
        action: 'register',
        username: v('username').trim(),
        email: v('email').trim(),
        password: v('password'),
      };
    } else {
      const login = v('login').trim();
      payload = { action: 'login', [login.includes('@') ? 'email' : 'username']: login, password: v('password') };
    }
    const button = form.querySelector('button');
    button.disabled = true;
    const r = await api('POST', '/api/auth', payload);
    button.disabled = false;
    if (r.ok) return location.assign(nextPath());
    say(notice, r.status === 401 ? 'Wrong email, username or password.' : explain(r));
  });
  show(
    h('h1', {}, register ? 'Create an account' : 'Sign in'),
    form,
    h(
      'p',
      {},
      register
        ? ['Have an account? ', h('a', { href: '/signin' }, 'Sign in')]
        : ['New here? ', h('a', { href: '/signup' }, 'Create an account')],
    ),
  );
  form.querySelector('input').focus();
}

// ------------------------------------------------------------------------------------------------ upload form

const MAX_FILE = 10 * 1024 * 1024;

function newPage() {
  setTitle('Upload');
  if (!ME) {
    show(h('h1', {}, 'Upload'), h('p', {}, signinLink('Sign in'), ' to upload an image or a link.'));
    return;
  }
  const notice = alertBox();
  const kinds = [
    ['file', 'An image file'],
    ['image_url', 'An image from a URL'],
    ['link', 'A link'],
  ];
  const kindRadios = kinds.map(([value, label], i) =>
    h('label', { class: 'radio' }, h('input', { type: 'radio', name: 'kind', value, checked: i === 0 }), ' ', label),
  );

  const file = h('input', {
    type: 'file',
    id: 'file',
    name: 'file',
    accept: 'image/jpeg,image/png,image/gif,image/webp',
  });
  const preview = h('img', { class: 'preview', alt: 'Preview of the chosen image', hidden: true });
  const fileInfo = h('p', { class: 'hint', 'aria-live': 'polite' });
  const drop = h(
    'div',
    { class: 'drop' },
    h('label', { for: 'file' }, 'Drop an image here, or choose a file (JPEG, PNG, GIF or WebP, up to 10 MB)'),
    file,
    preview,
    fileInfo,
  );
  let previewUrl = null;
  const showFile = () => {
    const f = file.files?.[0];
    if (previewUrl) URL.revokeObjectURL(previewUrl);
    previewUrl = null;
    preview.hidden = !f;
    if (!f) return (fileInfo.textContent = '');
    previewUrl = URL.createObjectURL(f);
    preview.src = previewUrl;
    const mb = (f.size / 1024 / 1024).toFixed(1);
    fileInfo.textContent = `${f.name} · ${mb} MB${f.size > MAX_FILE ? ' · too large: the limit is 10 MB' : ''}`;
  };
  file.addEventListener('change', showFile);
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    if (e.dataTransfer?.files?.length) {
      file.files = e.dataTransfer.files;
      showFile();
    }
  });

  const imageUrl = field('image_url', 'Image URL', { type: 'url', placeholder: 'https://example.com/cat.jpg' });
  const linkUrl = field('external_url', 'Link', { type: 'url', placeholder: 'https://www.youtube.com/watch?v=…' });
  const sections = { file: drop, image_url: imageUrl, link: linkUrl };
  const showKind = (kind) => {
    for (const [k, el] of Object.entries(sections)) el.hidden = k !== kind;
  };
  showKind('file');

  const description = h('textarea', { id: 'description', name: 'description', rows: 3 });
  const tags = h('input', { id: 'tags', name: 'tags', autocomplete: 'off', placeholder: 'cats, cute' });
  const isPrivate = h('input', { type: 'checkbox', id: 'is_private', name: 'is_private' });
  const progress = h('progress', { max: 1, value: 0, hidden: true, 'aria-label': 'Upload progress' });
  const submit = h('button', { type: 'submit' }, 'Upload');

  const form = h(
    'form',
    { class: 'new' },
    h('fieldset', { class: 'kinds' }, h('legend', {}, 'What are you sharing?'), kindRadios),
    drop,
    imageUrl,
    linkUrl,
    h(
      'p',
      { class: 'field' },
      h('label', { for: 'description' }, 'Description'),
      description,
      counter(description, 500, (v) => ({ n: v.length })),
    ),
    h('p', { class: 'field' }, h('label', { for: 'tags' }, 'Tags, separated by commas'), tags, tagsCounter(tags)),
    h(
      'p',
      {},
      isPrivate,
      ' ',
      h('label', { for: 'is_private' }, 'Private (not in the feed; anyone with the link can see it)'),
    ),
    submit,
    progress,
    notice,
  );
  form.addEventListener('change', (e) => {
    if (e.target.name === 'kind') showKind(e.target.value);
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const kind = form.elements.namedItem('kind').value;
    const fd = new FormData();
    if (kind === 'file') {
      const f = file.files?.[0];
      if (!f) return say(notice, 'Choose an image file first.');
      if (f.size > MAX_FILE) return say(notice, explain({ data: { error: 'payload_too_large' } }));
      fd.set('upload_type', 'image');
      fd.set('file', f, f.name);
    } else if (kind === 'image_url') {
      fd.set('upload_type', 'image_url');
      fd.set('image_url', form.elements.namedItem('image_url').value.trim());
    } else {
      fd.set('upload_type', 'link');
      fd.set('external_url', form.elements.namedItem('external_url').value.trim());
    }
    fd.set('description', description.value);
    fd.set('tags', splitTags(tags.value).join(','));
    fd.set('is_private', String(isPrivate.checked));

    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/v1/upload');
    xhr.responseType = 'json';
    xhr.setRequestHeader('Idempotency-Key', crypto.randomUUID());
    progress.hidden = false;
    progress.value = 0;
    submit.disabled = true;
    say(notice, 'Uploading…', 'info');
    xhr.upload.addEventListener('progress', (p) => {
      if (p.lengthComputable) progress.value = p.loaded / p.total;
    });
    const finish = (r) => {
      submit.disabled = false;
      progress.hidden = true;
      if (r.status === 201) return location.assign(`/uploads/${encodeURIComponent(r.data.id)}`);
      if (r.ok && r.data?.duplicate) {
        notice.className = 'alert info';
        notice.replaceChildren(
          r.data.match === 'near' ? 'A very similar image is already here: ' : 'This image is already here: ',
          h('a', { href: `/uploads/${encodeURIComponent(r.data.existingUploadId)}` }, 'see the existing upload'),
          '.',
        );
        return;
      }
      say(notice, explain(r));
    };
    xhr.addEventListener('load', () =>
      finish({
        ok: xhr.status >= 200 && xhr.status < 300,
        status: xhr.status,
        data: xhr.response,
        retryAfter: xhr.getResponseHeader('retry-after'),
      }),
    );
    xhr.addEventListener('error', () => finish({ ok: false, status: 0, data: { error: 'network' } }));
    xhr.send(fd);
  });
  show(h('h1', {}, 'Upload'), form);
}

// --------------------------------------------------------------------------------------------------- profile

async function profilePage() {
  setTitle('Your profile');
  if (!ME) {
    show(h('h1', {}, 'Profile'), h('p', {}, signinLink('Sign in'), ' to see your uploads and API tokens.'));
    return;
  }
  const [profile, tokens] = await Promise.all([api('GET', '/api/profile'), api('GET', '/api/auth/tokens')]);
  if (!profile.ok) {
    show(h('h1', {}, 'Profile'), h('p', { class: 'alert error' }, explain(profile)));
    return;
  }
  const { user, stats, uploads } = profile.data;
  const grid = h(
    'ol',
    { class: 'grid', 'aria-label': 'Your uploads' },
    uploads.map((u, i) => card(u, i < 6)),
  );
  show(
    h('h1', {}, user.username),
    h(
      'p',
      { class: 'meta' },
      `${plural(stats.uploads, 'upload', 'uploads')} · ${stats.upvotes_received} upvotes and ` +
        `${stats.downvotes_received} downvotes received · ${plural(stats.votes_cast, 'vote', 'votes')} cast`,
    ),
    h('h2', {}, 'Your latest uploads'),
    uploads.length ? grid : h('p', {}, 'No uploads yet. ', h('a', { href: '/new' }, 'Upload something')),
    tokenSection(tokens.ok ? tokens.data.tokens : []),
  );
}

function tokenSection(initial) {
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
        h('td'),
      ),
    ),
    rows,
  );
  const empty = h('p', {}, 'No API tokens.');
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

  const name = h('input', { id: 'token-name', name: 'name', required: true, maxlength: 100, autocomplete: 'off' });
  const shown = h('div', { class: 'secret', hidden: true });
  const form = h(
    'form',
    { class: 'inline' },
    h('label', { for: 'token-name' }, 'New token name'),
    name,
    h('button', { type: 'submit' }, 'Create token'),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!name.value.trim()) return say(notice, 'Give the token a name.');
    const r = await api('POST', '/api/auth/tokens/generate', { name: name.value.trim() });
    if (!r.ok) return say(notice, explain(r));
    name.value = '';
    const value = h('input', { id: 'new-token', readonly: true, value: r.data.token, class: 'mono' });
    const copy = h('button', { type: 'button' }, 'Copy');
    const copied = h('span', { role: 'status' });
    copy.addEventListener('click', async () => {
      value.select();
      try {
        await navigator.clipboard.writeText(r.data.token);
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
    h('p', { class: 'hint' }, 'For the command line and scripts: send it as Authorization: Bearer <token>.'),
    form,
    shown,
    notice,
    table,
    empty,
  );
}

// ------------------------------------------------------------------------------------------------ moderation

async function moderationPage() {
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

  const r = await api('GET', '/api/admin/moderation?status=open&limit=50');
  if (!r.ok) return (queueStatus.textContent = explain(r));
  queue.replaceChildren(...r.data.items.map((it) => (it.kind === 'vote_ring' ? voteRingItem(it) : queueItem(it))));
  queueStatus.textContent = r.data.items.length ? '' : 'The queue is empty.';
  await loadUsers(users, '');
}

/** A vote ring the detector found (API.md Moderation, "Vote rings"): its accounts, evidence, void or dismiss. */
function voteRingItem(item) {
  const e = item.evidence;
  const notice = alertBox();
  const reason = h('input', { id: `reason-${item.id}`, autocomplete: 'off' });
  // No thumbnail column: the ring's text takes the item's whole width.
  const li = h('li', { class: 'qitem ring' });
  const act = async (action) => {
    const res = await api('POST', `/api/admin/vote-rings/${item.id}`, { action, reason: reason.value.trim() });
    if (!res.ok) return say(notice, explain(res));
    say(
      notice,
      action === 'void' ? `Voided: ${plural(res.data.voided_votes, 'vote', 'votes')} removed.` : 'Dismissed.',
      'ok',
    );
  };
  const buttons = [
    ['void', 'Void their votes'],
    ['dismiss', 'Dismiss'],
  ].map(([a, label]) => {
    const b = h('button', { type: 'button', class: a === 'void' ? 'danger' : 'secondary' }, label);
    b.addEventListener('click', () => void act(a));
    return b;
  });
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
      h('p', {}, item.accounts.map((u) => u.username).join(', ')),
      h('p', { class: 'inline' }, h('label', { for: `reason-${item.id}` }, 'Reason'), reason),
      h('p', { class: 'inline' }, ...buttons),
      notice,
    ),
  );
  return li;
}

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
  const act = async (action) => {
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
  const buttons = [
    ['approve', 'Approve'],
    ['hold', 'Hold'],
    ['remove', 'Remove'],
  ].map(([a, label]) => {
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
  li.append(
    h('div', { class: 'qthumb' }, card(u, false).firstChild),
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
        item.person_flag ? ' · person detected' : '',
      ),
      (item.reports?.notes ?? []).length
        ? h(
            'ul',
            { class: 'notes' },
            item.reports.notes.map((n) => h('li', {}, n)),
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

async function loadUsers(box, q) {
  const r = await api('GET', `/api/admin/users?limit=20${q ? `&q=${encodeURIComponent(q)}` : ''}`);
  if (!r.ok) return box.replaceChildren(h('p', { class: 'alert error' }, explain(r)));
  const notice = alertBox();
  const rows = r.data.users.map((u) => {
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
        ['1', '7', '30'].map((d) => h('option', { value: d }, `${d} days`)),
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
          u.banned_until === 'permanent' || !u.banned_until
            ? 'banned for good'
            : ['banned until ', when(u.banned_until)],
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
      ? h(
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
        )
      : h('p', {}, 'No users found.'),
  );
}

async function modlogPage() {
  setTitle('Moderation log');
  const page = Math.max(1, Number.parseInt(new URLSearchParams(location.search).get('page') ?? '1', 10) || 1);
  const r = await api('GET', `/api/modlog?page=${page}&limit=50`);
  if (!r.ok) {
    show(h('h1', {}, 'Moderation log'), h('p', { class: 'alert error' }, explain(r)));
    return;
  }
  const rows = r.data.entries.map((e) =>
    h(
      'tr',
      {},
      h('td', {}, when(e.at)),
      h('td', {}, e.action.replace('_', ' ')),
      h(
        'td',
        {},
        // A null id: an upload the public view may not name (private, held, removed while private).
        e.target.type === 'upload'
          ? e.target.id
            ? h('a', { href: `/uploads/${encodeURIComponent(e.target.id)}` }, 'an upload')
            : 'an upload (not public)'
          : `a ${e.target.type} entry`,
      ),
      h('td', {}, e.reason ?? ''),
      e.moderator !== undefined ? h('td', {}, e.moderator?.username ?? 'automatic') : null,
    ),
  );
  const admin = r.data.entries.some((e) => e.moderator !== undefined);
  show(
    h('h1', {}, 'Moderation log'),
    h('p', { class: 'hint' }, 'Every moderation action, newest first. Nothing here is ever changed or deleted.'),
    rows.length
      ? h(
          'table',
          { class: 'modlog' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['When', 'Action', 'Target', 'Reason', ...(admin ? ['Moderator'] : [])].map((t) =>
                h('th', { scope: 'col' }, t),
              ),
            ),
          ),
          h('tbody', {}, rows),
        )
      : h('p', {}, 'No moderation actions yet.'),
    h(
      'nav',
      { class: 'pager', 'aria-label': 'Pages' },
      page > 1 ? h('a', { href: `/modlog?page=${page - 1}` }, '← Newer') : null,
      r.data.has_more ? h('a', { href: `/modlog?page=${page + 1}` }, 'Older →') : null,
    ),
  );
}

// ------------------------------------------------------------------------------------------------------ start

document.getElementById('signout')?.addEventListener('click', async () => {
  await api('POST', '/api/auth', { action: 'logout' });
  location.assign('/');
});

const pages = {
  feed: feedPage,
  upload: uploadPage,
  new: newPage,
  signin: () => authPage(false),
  signup: () => authPage(true),
  profile: profilePage,
  moderation: moderationPage,
  modlog: modlogPage,
};
await pages[body.dataset.page]?.();
body.dataset.ready = 'true';
