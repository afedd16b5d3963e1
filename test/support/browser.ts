/**
 * Headless Chromium (Debian's package) driven by playwright-core, for the tests of the web pages: a page that
 * records everything that must not happen (a request to another origin, a failed request, a console error, an
 * uncaught exception, a CSP violation), so each test can assert there was none.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { scaledBudget } from './budget.ts';

export const CHROMIUM = '/usr/bin/chromium';
const INSTALL = 'apt-get update && apt-get install -y chromium';

/**
 * Why a browser test is skipped: Chromium is missing on a developer machine. CI (PIXVOTE_REQUIRE_SERVICES=1)
 * does not skip: the launch fails instead.
 */
export const noBrowser: string | false =
  !existsSync(CHROMIUM) &&
  process.env.PIXVOTE_REQUIRE_SERVICES !== '1' &&
  `needs Debian's chromium at ${CHROMIUM}: ${INSTALL}`;

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-sync'],
  });
}

export interface WatchedPage {
  page: Page;
  /** Everything that went wrong since the last `take()`: empty on a healthy page. */
  problems: string[];
  /** The problems so far, cleared. */
  take(): string[];
}

/** A page in `context` whose requests to anything but `origin` are refused and recorded, as are failures. */
export async function watchedPage(context: BrowserContext, origin: string): Promise<WatchedPage> {
  const problems: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    problems.push(`request to another origin: ${url}`);
    return route.abort();
  });
  const page = await context.newPage();
  // Playwright's 30 s default is for a quiet machine; CI shares 2 cores with the servers under test. A wait that
  // never ends still fails, a minute later (stretched by the machine's load).
  page.setDefaultTimeout(scaledBudget(60_000));
  page.setDefaultNavigationTimeout(scaledBudget(60_000));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    const error = r.failure()?.errorText ?? '';
    // ERR_ABORTED: cancelled by the browser because the page was left (a test moving on while the favicon,
    // fetched after load, is still on its way), not refused or broken: every other failure counts.
    if (error !== 'net::ERR_ABORTED') problems.push(`request failed: ${r.url()} ${error}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  // Runs in the page (a string: test files are type-checked without the DOM library).
  await page.addInitScript(
    "document.addEventListener('securitypolicyviolation', (e) => " +
      "console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));",
  );
  return {
    page,
    problems,
    take: () => problems.splice(0),
  };
}

/** Opens a pixvote page and waits until app.js has rendered it. */
export async function openPage(page: Page, url: string): Promise<void> {
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('body[data-ready="true"]');
}
