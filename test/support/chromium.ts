import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium (infra/local/install.sh installs the `chromium` package); RSTAR_CHROMIUM overrides it. */
export const CHROMIUM = process.env.RSTAR_CHROMIUM ?? '/usr/bin/chromium';

/** Where tests save screenshots (CI keeps `.rstar/` as artefacts). */
export const SCREENSHOT_DIR = resolve(__dirname, '../../.rstar/screenshots');

/** A headless Chromium (playwright-core gives each launch a fresh temporary profile). */
export interface HeadlessChromium {
  browser: Browser;
  /** A page with a laptop-sized viewport (1440x900). */
  page(): Promise<Page>;
  close(): Promise<void>;
}

/**
 * Launch Debian's chromium through playwright-core (no browser download): headless, no sandbox (tests
 * run as root in CI), no GPU, and no background networking, QUIC, sync or component updates, which this
 * machine's closed network would refuse at every start.
 */
export async function launchChromium(): Promise<HeadlessChromium> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    browser,
    page: async () => {
      const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      return ctx.newPage();
    },
    close: () => browser.close(),
  };
}

/** Save a full-page screenshot as `.rstar/screenshots/<name>.png`; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
