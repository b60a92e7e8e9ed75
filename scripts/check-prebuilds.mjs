// Before `npm pack` (warns) and `npm publish` (fails, with --strict): the package should carry its
// prebuilt addon, else every install compiles it (python3, make and a C++20 compiler needed).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const prebuild = join('prebuilds', 'linux-x64', 'sightline.node');
if (!existsSync(join(root, prebuild))) {
  const strict = process.argv.includes('--strict');
  process.stderr.write(
    `sightline: ${prebuild} is missing, so this package would compile its addon on every install ` +
      `(python3, make and a C++20 compiler needed there). Run \`npm run prebuildify\` first.\n`,
  );
  if (strict) process.exit(1);
}
