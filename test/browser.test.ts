// The live page in a real browser: `sightline herd --web` is started, headless Chromium (Debian's
// chromium, driven by playwright-core) opens the page, which joins the herd as a WebSocket client;
// the test waits until the page reports, tick by tick, that it holds exactly the entities the
// server's ghost table says it holds, and saves a screenshot under test-output/.
// Without Chromium the test does not run (test/global-setup.ts says so after the run, with the
// command that installs it); `.ci/run` installs it and sets SIGHTLINE_REQUIRE_BROWSER=1, which
// makes its absence a failure.
import { describe, it, expect, afterEach } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BROWSER_PATH, browserAvailable } from './helpers/browser.js';
import { root, startWebHerd, stopWebHerd } from './helpers/herd-web.js';

const OUT = join(root, 'test-output', 'browser');
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

if (process.env.SIGHTLINE_REQUIRE_BROWSER === '1' && !browserAvailable()) {
  throw new Error(`SIGHTLINE_REQUIRE_BROWSER=1 but there is no Chromium at ${BROWSER_PATH}`);
}

/** Starts `sightline herd --web` on a free port; resolves with the page's URL. */

describe.runIf(browserAvailable())('the live page in headless Chromium', () => {
  it('joins the herd over WebSocket and holds, tick by tick, exactly what the server ghost table says it holds; a screenshot is saved', async () => {
    const { chromium } = await import('playwright-core');
    const { url, herd, output } = await startWebHerd(['--scenario', 'uniform', '--entities', '3000', '--threads', '1', '--seconds', '120'], cleanups);
    const profile = mkdtempSync(join(tmpdir(), 'sightline-chromium-'));
    cleanups.push(() => rmSync(profile, { recursive: true, force: true }));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: BROWSER_PATH,
      headless: true,
      viewport: { width: 1000, height: 760 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    cleanups.push(() => context.close());
    const page = context.pages()[0] ?? (await context.newPage());
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    await page.goto(url);
    // Twenty ticks compared (a second at 20 Hz), once the page has connected.
    await page.waitForFunction(() => (window as unknown as { sightlineView?: { ticksCompared: number; status: string } }).sightlineView?.ticksCompared! >= 20, null, {
      timeout: 60_000,
      polling: 100,
    });
    const view = (await page.evaluate(() => (window as unknown as { sightlineView: unknown }).sightlineView)) as {
      status: string;
      avatar: number;
      held: number;
      ghosts: number;
      ticksCompared: number;
      ticksMatched: number;
      ticksMismatched: number;
      last: { tick: number; match: boolean; held: number; ghosts: number; onlyClient: number[]; onlyServer: number[] };
      bytesPerSecond: number;
      fill: number;
      packets: number;
    };
    expect(problems).toEqual([]);
    expect(view.status).toBe('connected');
    // Every tick compared matched: the page held what the ghost table held, at the same tick.
    expect(view.ticksMismatched, JSON.stringify(view.last)).toBe(0);
    expect(view.ticksMatched).toBe(view.ticksCompared);
    expect(view.last.match).toBe(true);
    expect(view.last.held).toBeGreaterThan(0);
    expect(view.bytesPerSecond).toBeGreaterThan(0);
    expect(view.fill).toBeGreaterThan(0);
    expect(view.fill).toBeLessThanOrEqual(1);
    mkdirSync(OUT, { recursive: true });
    const shot = join(OUT, 'live-view.png');
    await page.screenshot({ path: shot });
    expect(existsSync(shot) && statSync(shot).size > 1000).toBe(true);
    // The herd reports the page that joined, once it ends.
    await stopWebHerd(herd);
    const report = JSON.parse(output().trim()) as { web: { pagesJoined: number; server: { packetsSent: number; connects: number } } };
    expect(report.web.pagesJoined).toBe(1);
    expect(report.web.server.connects).toBe(1);
    expect(report.web.server.packetsSent).toBeGreaterThanOrEqual(view.packets);
  }, 120_000);
});
