// pixvote's pages: vanilla ES modules, no build step. The server sends each page as a small HTML shell
// (src/gateway/routes/web.routes.ts) naming the page and the signed-in visitor, with this module and the page's
// own (web/pages/) preloaded; the page module renders it from the public API and does every write through it.
// Every import names a file under web/ (or thumbhash); src/gateway/web-assets.ts serves each under its hashed name.
import { api } from './lib/api.js';
import { body } from './lib/dom.js';

/** @typedef {{ render(page: string): unknown }} Page */

/** Page name (the shell's data-page) → its module. */
/** @type {Record<string, () => Promise<Page>>} */
const pages = {
  feed: () => import('./pages/feed.js'),
  user: () => import('./pages/feed.js'),
  upload: () => import('./pages/upload.js'),
  new: () => import('./pages/new.js'),
  signin: () => import('./pages/auth.js'),
  signup: () => import('./pages/auth.js'),
  profile: () => import('./pages/profile.js'),
  moderation: () => import('./pages/moderation.js'),
  modlog: () => import('./pages/modlog.js'),
};

document.getElementById('signout')?.addEventListener('click', async () => {
  await api('POST', '/api/auth', { action: 'logout' });
  location.assign('/');
});

const name = body.dataset.page ?? '';
const page = await pages[name]?.();
await page?.render(name);
body.dataset.ready = 'true';
