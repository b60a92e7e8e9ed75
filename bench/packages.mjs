// The benchmark's optional dev dependencies (@colyseus/schema, tinybench): loaded when installed,
// their versions read from package.json for the results.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The package's module, or null when it is not installed. */
export async function loadOptional(name) {
  try {
    return await import(name);
  } catch {
    return null;
  }
}

/** The installed version of a package (bench/node_modules, then node_modules), or null. */
export function packageVersion(name) {
  for (const base of [join(root, 'bench', 'node_modules'), join(root, 'node_modules')]) {
    const p = join(base, name, 'package.json');
    if (existsSync(p)) return JSON.parse(readFileSync(p, 'utf8')).version;
  }
  return null;
}
