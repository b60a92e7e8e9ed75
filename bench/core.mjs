// The C++ engine benchmark (bench/core/bench.cpp) from bench/run.mjs: built on demand into
// bench/out/bench-core, run once per configuration, its JSON line parsed.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Path of the benchmark binary. */
export const CORE_BINARY = join(root, 'bench', 'out', 'bench-core');

/** The build command, as run (relative to the repository root). */
export const CORE_BUILD_COMMAND =
  'g++ -std=c++20 -O3 -Inative/core native/core/*.cpp bench/core/bench.cpp -o bench/out/bench-core -lpthread';

function sources() {
  const dir = join(root, 'native', 'core');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpp') || f.endsWith('.h'))
    .map((f) => join(dir, f));
  files.push(join(root, 'bench', 'core', 'bench.cpp'));
  return files;
}

/**
 * Builds the binary when it is missing or older than a source. Returns null on success, else the
 * compiler's message.
 * @param {(line: string) => void} log
 * @returns {string | null}
 */
export function buildCore(log) {
  const srcs = sources();
  if (existsSync(CORE_BINARY)) {
    const built = statSync(CORE_BINARY).mtimeMs;
    if (srcs.every((f) => statSync(f).mtimeMs <= built)) return null;
  }
  mkdirSync(dirname(CORE_BINARY), { recursive: true });
  log(`building ${CORE_BINARY} (${CORE_BUILD_COMMAND})`);
  const cpp = srcs.filter((f) => f.endsWith('.cpp'));
  try {
    execFileSync('g++', ['-std=c++20', '-O3', `-I${join(root, 'native', 'core')}`, ...cpp, '-o', CORE_BINARY, '-lpthread'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return null;
  } catch (e) {
    return String(e.stderr ?? e.message).trim().split('\n').slice(0, 5).join('\n');
  }
}

/**
 * Runs the binary with the given arguments and returns its JSON result.
 * @param {string[]} args e.g. ['--mode', 'snapshot', '--scenario', 'uniform']
 * @returns {Record<string, number | string>}
 */
export function runCore(args) {
  const out = execFileSync(CORE_BINARY, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
  const line = out.trim().split('\n').pop();
  return JSON.parse(line);
}

// As a command (npm run bench:core -- [options]): builds the binary when a source is newer, then
// runs it with the given options.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const err = buildCore((m) => process.stderr.write(`[bench:core] ${m}\n`));
  if (err !== null) {
    process.stderr.write(`[bench:core] the build failed:\n${err}\n`);
    process.exit(1);
  }
  const r = spawnSync(CORE_BINARY, process.argv.slice(2), { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
