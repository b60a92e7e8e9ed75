// Where the browser test finds Chromium (Debian's chromium package), and whether it is there.
import { existsSync } from 'node:fs';

/** The Chromium binary the browser test drives: SIGHTLINE_CHROMIUM, else Debian's. */
export const BROWSER_PATH = process.env.SIGHTLINE_CHROMIUM ?? '/usr/bin/chromium';

/** The one command that installs what the browser test needs (playwright-core comes with npm ci). */
export const BROWSER_INSTALL = 'sudo apt-get update && sudo apt-get install -y chromium';

export function browserAvailable(): boolean {
  return existsSync(BROWSER_PATH);
}
