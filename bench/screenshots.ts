/**
 * The pictures of issue 30 in docs/web-pages.md, from the app seeded with generated images
 * (bench/support/web-seed.ts; never photos of people), in Debian's Chromium:
 *
 * - docs/unfurl-card.png, "the unfurled card": an upload's page scraped by open-graph-scraper as a chat app's
 *   link unfurler scrapes it, its title, description, image and site name drawn as a link preview;
 * - docs/nojs-feed.png, "the no-JS page": the feed at 1280 px with JavaScript off, as the server renders it.
 *
 * Small palette PNGs, as bench:web writes its own.
 *
 *   npm run screenshots   (the card shows the page's address on https://pixvote.example instead of 127.0.0.1:<port>)
 */
import { writeFile } from 'node:fs/promises';
import ogs from 'open-graph-scraper';
import type { Page } from 'playwright-core';
import sharp from 'sharp';
import { launchBrowser } from '../test/support/browser.ts';
import { escapeHtml } from '../src/gateway/web-render.ts';
import { startSeededApp } from './support/web-seed.ts';
import { parseCommandLine } from './support/cli.ts';

async function save(name: string, png: Buffer, width: number): Promise<void> {
  const small = await sharp(png).resize({ width }).png({ palette: true, colors: 128, effort: 10 }).toBuffer();
  await writeFile(new URL(`../docs/${name}.png`, import.meta.url), small);
  console.log(`docs/${name}.png: ${small.length} B`);
}

/** A chat app's link preview of what the scraper found: site, title (linked), description, image. */
function cardHtml(card: { site: string; title: string; description: string; url: string; image: string }): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><style>
body { margin: 0; padding: 24px; background: #fff; font: 15px/1.4 system-ui, sans-serif; color: #1d1c1d; }
.msg { display: flex; gap: 10px; max-width: 560px; }
.avatar { width: 36px; height: 36px; border-radius: 6px; background: #4a6fa5; flex: none; }
.who { font-weight: 700; } .who span { font-weight: 400; color: #616061; font-size: 12px; margin-left: 6px; }
.text a { color: #1264a3; }
.unfurl { margin-top: 6px; border-left: 4px solid #ddd; padding: 2px 0 2px 12px; }
.site { font-weight: 700; font-size: 14px; }
.title { color: #1264a3; font-weight: 700; text-decoration: none; display: block; margin: 2px 0; }
.desc { margin: 0 0 8px; }
.unfurl img { display: block; max-width: 360px; max-height: 240px; border-radius: 8px; }
</style></head><body><div class="msg"><div class="avatar"></div><div>
<div class="who">jon_k <span>12:04</span></div>
<div class="text">look at this one <a href="${escapeHtml(card.url)}">${escapeHtml(card.url)}</a></div>
<div class="unfurl"><div class="site">${escapeHtml(card.site)}</div>
<a class="title" href="${escapeHtml(card.url)}">${escapeHtml(card.title)}</a>
<p class="desc">${escapeHtml(card.description)}</p>
<img src="${escapeHtml(card.image)}" alt=""></div></div></div></body></html>`;
}

parseCommandLine(
  'npm run screenshots --',
  {},
  {
    help: {
      summary:
        'Draws the pictures of issue 30 (docs/web-pages.md) from the app seeded with generated images, ' +
        "in Debian's Chromium: " +
        "docs/unfurl-card.png (an upload's page as a chat app's unfurler reads it) and docs/nojs-feed.png (the feed " +
        'at 1280 px with JavaScript off).',
      options: {},
    },
  },
);

const app = await startSeededApp();
const browser = await launchBrowser();
try {
  const origin = app.server.url;
  // (a) The unfurled card: the page as a chat app's unfurler reads it.
  const url = `${origin}/uploads/${app.imageId}`;
  const { error, result } = await ogs({
    url,
    fetchOptions: { headers: { 'user-agent': 'Slackbot-LinkExpanding 1.0' } },
  });
  if (error) throw new Error(`open-graph-scraper: ${JSON.stringify(result)}`);
  const imageUrl = result.ogImage?.[0]?.url;
  if (!result.ogTitle || !imageUrl) throw new Error(`no card: ${JSON.stringify(result)}`);
  // The unfurler fetches the image itself and shows its copy.
  const image = await fetch(imageUrl);
  const bytes = Buffer.from(await image.arrayBuffer());
  const card = {
    site: result.ogSiteName ?? '',
    title: result.ogTitle,
    description: result.ogDescription ?? '',
    url: url.replace(origin, 'https://pixvote.example'),
    image: `data:${image.headers.get('content-type')};base64,${bytes.toString('base64')}`,
  };
  const shoot = async (page: Page, selector: string) => await page.locator(selector).screenshot();
  {
    const context = await browser.newContext({ viewport: { width: 640, height: 480 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await page.setContent(cardHtml(card), { waitUntil: 'load' });
    await save('unfurl-card', await shoot(page, '.msg'), 560);
    await context.close();
  }
  // (b) The no-JS page: the feed as the server renders it, scripts off.
  {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const r = await page.goto(`${origin}/`, { waitUntil: 'load' });
    if (r?.status() !== 200) throw new Error(`feed: ${r?.status()}`);
    if (await page.locator('body[data-ready]').count()) throw new Error('a script ran');
    await save('nojs-feed', await page.screenshot(), 960);
    await context.close();
  }
} finally {
  await browser.close();
  await app.stop();
}
