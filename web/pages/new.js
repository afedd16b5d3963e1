// The upload form (`/new`): an image file (dropped or chosen, previewed), an image URL or a link, with a
// description, tags and privacy; the file is sent with progress, duplicates are pointed to. A file larger than one
// chunk (1 MiB) goes resumably (lib/resumable.js: tus-js-client, loaded when such a file is chosen): when the network
// drops, the upload goes on from where the server is.
import { api, explain, megabytes } from '../lib/api.js';
import { alertBox, h, ME, say, setTitle, show, signinLink } from '../lib/dom.js';
import { field, lengthCounter, splitTags, tagsCounter } from '../lib/forms.js';
import { limits } from '../lib/limits.js';
/** @import { ApiResult } from '../lib/api.js' */
/** @import * as Resumable from '../lib/resumable.js' */

/** Bytes per PATCH; files up to this size go in one direct request instead (they gain nothing from resuming). */
const CHUNK = 1024 * 1024;

/** @type {Promise<typeof Resumable> | null} */
let resumable = null;
/** The resumable client (tus-js-client, its own chunk), fetched once; a failed fetch is tried again when asked. */
function loadResumable() {
  return (resumable ??= import('../lib/resumable.js').catch((/** @type {unknown} */ e) => {
    resumable = null;
    throw e;
  }));
}

export function render() {
  setTitle('Upload');
  if (!ME) {
    show(h('h1', {}, 'Upload'), h('p', {}, signinLink('Sign in'), ' to upload an image or a link.'));
    return;
  }
  // Whose kept uploads a resumable one may go on from (lib/resumable.js).
  const user = ME.id ?? ME.username;
  const maxFile = limits.maxFileBytes;
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
    h(
      'label',
      { for: 'file' },
      `Drop an image here, or choose a file (JPEG, PNG, GIF or WebP, up to ${megabytes(maxFile)} MB)`,
    ),
    file,
    preview,
    fileInfo,
  );
  /** @type {string | null} */
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
    const tooLarge = f.size > maxFile ? ` · too large: the limit is ${megabytes(maxFile)} MB` : '';
    fileInfo.textContent = `${f.name} · ${mb} MB${tooLarge}`;
    // Fetched while the visitor fills in the form: by the time they press Upload, it is there.
    if (f.size > CHUNK && !tooLarge) loadResumable().catch(() => {});
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
  /** @param {string} kind */
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
      lengthCounter(description, limits.maxDescription),
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
  /** @param {string} name */
  const valueOf = (name) => /** @type {HTMLInputElement | RadioNodeList} */ (form.elements.namedItem(name)).value;
  form.addEventListener('change', (e) => {
    const target = /** @type {HTMLInputElement} */ (e.target);
    if (target.name === 'kind') showKind(target.value);
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const kind = valueOf('kind');
    const fd = new FormData();
    if (kind === 'file') {
      const f = file.files?.[0];
      if (!f) return say(notice, 'Choose an image file first.');
      if (f.size > maxFile)
        return say(notice, explain({ ok: false, status: 413, data: { error: 'payload_too_large' } }));
      fd.set('upload_type', 'image');
      fd.set('file', f, f.name);
    } else if (kind === 'image_url') {
      fd.set('upload_type', 'image_url');
      fd.set('image_url', valueOf('image_url').trim());
    } else {
      fd.set('upload_type', 'link');
      fd.set('external_url', valueOf('external_url').trim());
    }
    fd.set('description', description.value);
    fd.set('tags', splitTags(tags.value).join(','));
    fd.set('is_private', String(isPrivate.checked));

    const key = crypto.randomUUID();
    progress.hidden = false;
    progress.value = 0;
    submit.disabled = true;
    say(notice, 'Uploading…', 'info');
    /** @param {ApiResult} r */
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
    const direct = () => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', '/api/v1/upload');
      xhr.responseType = 'json';
      xhr.setRequestHeader('Idempotency-Key', key);
      xhr.upload.addEventListener('progress', (p) => {
        if (p.lengthComputable) progress.value = p.loaded / p.total;
      });
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
    };
    const f = kind === 'file' ? file.files?.[0] : undefined;
    if (!f || f.size <= CHUNK) return direct();
    void loadResumable()
      .then(({ tusUpload }) =>
        tusUpload(f, {
          metadata: {
            upload_type: 'image',
            filename: f.name,
            description: description.value,
            tags: splitTags(tags.value).join(','),
            is_private: String(isPrivate.checked),
          },
          chunkSize: CHUNK,
          key,
          user,
          api,
          onProgress: (sent, total) => (progress.value = sent / total),
          onState: (text) => say(notice, text, 'info'),
        }),
      )
      .then(
        (r) => (r ? finish(r) : direct()),
        () => finish({ ok: false, status: 0, data: { error: 'network' } }),
      );
  });
  show(h('h1', {}, 'Upload'), form);
}
