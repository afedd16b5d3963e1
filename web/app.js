// pixvote's pages: vanilla ES modules, no build step of their own. The server renders each page's HTML
// (src/gateway/routes/web.routes.ts) naming the page and the signed-in visitor, and sends one script with it: this
// boot and the page's own module (web/pages/), bundled together at startup (src/gateway/web-assets.ts). The page
// module enhances what the server rendered, or renders from the public API, and does every write through it.
import { api } from './lib/api.js';
import { body } from './lib/dom.js';

/** @typedef {{ render(page: string): unknown }} Page */

/**
 * Runs the page: the shared sign-out button, then the page module on the page the shell names (`data-page`);
 * `data-ready` marks the end (tests wait for it).
 * @param {Page} page
 */
export async function boot(page) {
  document.getElementById('signout')?.addEventListener('click', async () => {
    await api('POST', '/api/auth', { action: 'logout' });
    location.assign('/');
  });
  await page.render(body.dataset.page ?? '');
  body.dataset.ready = 'true';
}
