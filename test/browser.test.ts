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

/**
 * Runs one step of the test under its own deadline, so that a slow or hung step fails naming
 * itself, how long it took and what the browser and the herd said, rather than as the whole
 * test's timeout.
 */
async function step<T>(name: string, ms: number, work: () => Promise<T>, log: () => string): Promise<T> {
  const began = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`step "${name}" took more than ${ms / 1000} s\n${log()}`)), ms);
  });
  try {
    return await Promise.race([work(), deadline]);
  } catch (e) {
    if (e instanceof Error && !e.message.startsWith(`step "${name}"`)) {
      e.message = `step "${name}" failed after ${((Date.now() - began) / 1000).toFixed(1)} s: ${e.message}\n${log()}`;
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

describe.runIf(browserAvailable())('the live page in headless Chromium', () => {
  it('joins the herd over WebSocket and holds, tick by tick, exactly what the server ghost table says it holds; a screenshot is saved', async () => {
    const { chromium } = await import('playwright-core');
    // The browser's own log (playwright's protocol and process lines) and the herd's stderr, the
    // last lines of each, go into any failure's message.
    const browserLog: string[] = [];
    let herdErr = () => '';
    const log = () =>
      `--- browser (last 40 lines) ---\n${browserLog.slice(-40).join('\n')}\n--- herd stderr (last 2000 chars) ---\n${herdErr().slice(-2000)}`;
    // A light herd (a few viewers besides the page): the test is about the page, and a loaded
    // two-core machine must still tick it at 20 Hz.
    const { url, herd, output, errors } = await step(
      'start the herd',
      60_000,
      () => startWebHerd(['--scenario', 'uniform', '--entities', '1000', '--viewers', '16', '--sample', '0', '--threads', '1', '--seconds', '240'], cleanups),
      log,
    );
    herdErr = errors;
    const profile = mkdtempSync(join(tmpdir(), 'sightline-chromium-'));
    cleanups.push(() => rmSync(profile, { recursive: true, force: true }));
    const context = await step(
      'launch Chromium',
      90_000,
      () =>
        chromium.launchPersistentContext(profile, {
          executablePath: BROWSER_PATH,
          headless: true,
          timeout: 85_000,
          viewport: { width: 1000, height: 760 },
          args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
          // Not the sanitizer runtimes that `npm run test:asan-addon` preloads into node and the herd:
          // preloaded into Chromium's launcher script they break it (it never starts).
          env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD' && k !== 'ASAN_OPTIONS' && k !== 'UBSAN_OPTIONS')) as Record<string, string>,
          logger: { isEnabled: () => true, log: (name, severity, message) => void browserLog.push(`${name} ${severity}: ${String(message)}`) },
        }),
      log,
    );
    cleanups.push(() => context.close());
    const page = context.pages()[0] ?? (await context.newPage());
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    await step('open the page', 60_000, () => page.goto(url, { timeout: 55_000 }), log);
    // Twenty ticks compared (a second at 20 Hz), once the page has connected.
    const pageState = () =>
      page.evaluate(() => JSON.stringify((window as unknown as { sightlineView?: unknown }).sightlineView ?? null)).catch((e: Error) => `(unreadable: ${e.message})`);
    let lastState = '';
    await step(
      'compare twenty ticks',
      90_000,
      () =>
        page.waitForFunction(() => (window as unknown as { sightlineView?: { ticksCompared: number } }).sightlineView?.ticksCompared! >= 20, null, {
          timeout: 85_000,
          polling: 100,
        }),
      () => `the page's state: ${lastState}\n${log()}`,
    ).catch(async (e: Error) => {
      lastState = await pageState();
      throw new Error(`${e.message}\nthe page's state: ${lastState}`);
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
    await step('stop the herd', 60_000, () => stopWebHerd(herd), log);
    const report = JSON.parse(output().trim()) as { web: { pagesJoined: number; server: { packetsSent: number; connects: number } } };
    expect(report.web.pagesJoined).toBe(1);
    expect(report.web.server.connects).toBe(1);
    expect(report.web.server.packetsSent).toBeGreaterThanOrEqual(view.packets);
  }, 420_000);
});
