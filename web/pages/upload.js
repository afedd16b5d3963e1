// An upload's page (`/uploads/:id`): the image or link (embeds load on request), votes, and for its owner the
// privacy switch, tags and delete; for any signed-in visitor the report form.
import { api, explain } from '../lib/api.js';
import { fit, placeholder, provenanceLabels, tagList } from '../lib/cards.js';
import { alertBox, h, hostOf, ME, safeUrl, say, setTitle, settled, show, signinLink, toDom, when } from '../lib/dom.js';
import { lengthCounter, splitTags, tagsCounter } from '../lib/forms.js';
import { limits } from '../lib/limits.js';
import { bindVotes } from '../lib/votes.js';
/** @import { Upload } from '../lib/cards.js' */

export async function render() {
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
  renderUpload(/** @type {Upload} */ (r.data));
}

/** @param {Upload} u */
function renderUpload(u) {
  // Titled by its description; without one, by who posted it.
  setTitle(u.description?.trim() || `Upload by ${u.username}`);
  const mine = ME && (ME.id === u.user_id || ME.admin);
  const notice = alertBox();

  let media;
  if (u.upload_type === 'image' && u.image) {
    const image = u.image;
    const size = fit(image.width, image.height, 1024);
    const src = `${image.url}?size=medium`;
    // The image the server rendered (src/gateway/upload-page.ts) stays where it painted: a new <img> would paint
    // again, later, and be the page's largest paint.
    const served = document.querySelector('#main > article.upload > figure.media > img');
    const img =
      served instanceof HTMLImageElement && served.getAttribute('src') === src
        ? served
        : h('img', {
            src,
            alt: u.description || u.original_name || 'Image',
            width: size.width,
            height: size.height,
            fetchpriority: 'high',
          });
    if (img !== served) placeholder(img, image.thumbhash);
    const full = h('button', { type: 'button', class: 'secondary' }, 'Show full size');
    full.addEventListener('click', () => {
      img.src = `${image.url}?size=full`;
      full.replaceWith(h('a', { href: `${image.url}?size=full` }, 'Open the full-size image'));
    });
    const caption = h('figcaption', {}, u.original_name ?? '', ' ', full);
    if (img === served && img.parentElement) {
      img.parentElement.querySelector(':scope > figcaption')?.replaceWith(caption);
      media = img.parentElement;
    } else {
      media = h('figure', { class: 'media' }, img, caption);
    }
  } else {
    const href = safeUrl(u.external_url);
    const embedBox = h('div', { class: 'embed' });
    const embedUrl = safeUrl(u.embed?.embed_url);
    if (embedUrl) {
      const provider = u.embed?.provider ?? 'external';
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
  // "1 upvote", "2 upvotes": the nouns (text nodes, as the markup was) follow the counts.
  const upNoun = document.createTextNode('');
  const downNoun = document.createTextNode('');
  /** @param {{ upvotes: number, downvote_count: number }} c */
  const nouns = (c) => {
    upNoun.data = c.upvotes === 1 ? ' upvote' : ' upvotes';
    downNoun.data = c.downvote_count === 1 ? ' downvote' : ' downvotes';
  };
  nouns(u);
  let votes;
  if (ME) {
    /** @param {'fucks' | 'does_not_fuck'} value @param {string} label */
    const button = (value, label) =>
      h('button', { type: 'button', class: `vote ${value}`, 'aria-pressed': String(u.my_vote === value) }, label);
    const upButton = button('fucks', 'Upvote');
    const downButton = button('does_not_fuck', 'Downvote');
    bindVotes(u.id, {
      up: upButton,
      down: downButton,
      nUp: up,
      nDown: down,
      onError: (text) => say(notice, text),
      onVoted: nouns,
    });
    votes = h('div', { class: 'votes', role: 'group', 'aria-label': 'Your vote' }, upButton, downButton);
  } else {
    votes = h('p', { class: 'votes' }, signinLink('Sign in to vote'));
  }

  const tags = h('div', { class: 'tagbox' }, tagList(u.tags));
  const owner = mine ? ownerTools(u, tags, notice) : null;
  // Nobody reports their own upload.
  const report = ME && ME.id !== u.user_id ? reportForm(u) : null;

  const labels = provenanceLabels(u);
  const about = h(
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
      labels ? toDom(labels) : null,
    ),
    h('p', { class: 'counts', 'aria-live': 'polite' }, '▲ ', up, upNoun, ' · ▼ ', down, downNoun),
    votes,
    tags,
    notice,
    owner,
    report,
  );
  const article = media.parentElement;
  if (media.isConnected && article) {
    // The server's article, its image kept: everything else in it replaced.
    for (const child of [...article.children]) if (child !== media) child.remove();
    article.append(about);
    settled();
  } else {
    show(h('article', { class: 'upload' }, media, about));
  }
}

/**
 * @param {Upload} u
 * @param {HTMLElement} tagsBox
 * @param {HTMLElement} notice
 */
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
    tagsCounter(tagInput, () => u.tags ?? []),
    h('button', { type: 'submit' }, 'Add'),
  );
  tagForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const tags = splitTags(tagInput.value);
    if (!tags.length) return;
    const r = await api('POST', `/api/uploads/${u.id}/tags`, { tags });
    if (!r.ok) return say(notice, explain(r));
    u.tags = r.data.tags;
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

/** @param {Upload} u */
function reportForm(u) {
  const reason = h(
    'select',
    { id: 'report-reason', name: 'reason' },
    limits.reportReasons.map((r) => h('option', { value: r }, r)),
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
    lengthCounter(note, limits.maxReportNote),
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
