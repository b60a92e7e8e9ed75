// Builds dist/ once before any test file runs: the CLI tests run the compiled `sightline` command.
// (tsc emits even when it reports type errors; those fail `npm run typecheck`.) After the run, says
// so when the browser test could not run here, and how to make it run.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BROWSER_INSTALL, BROWSER_PATH, browserAvailable } from './helpers/browser.js';

export default function setup(): () => void {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
    encoding: 'utf8',
  });
  if (tsc.error) throw tsc.error;
  const cli = join(root, 'dist', 'tools', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`tsc -p tsconfig.build.json did not produce ${cli}:\n${tsc.stdout}${tsc.stderr}`);
  return () => {
    if (!browserAvailable()) {
      process.stderr.write(
        `\nThe browser test (test/browser.test.ts) did not run: there is no Chromium at ${BROWSER_PATH}.\n` +
          `Install it with: ${BROWSER_INSTALL}\n\n`,
      );
    }
  };
}
