// The C++ engine benchmark (bench/core/bench.cpp) from bench/run.mjs: built with CMake (the release
// preset of CMakePresets.json, target sightline_bench) into build-cmake/release/native/bench-core,
// run once per configuration, its JSON line parsed.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Path of the benchmark binary. */
export const CORE_BINARY = join(root, 'build-cmake', 'release', 'native', 'bench-core');

/** The build command, as run (in the repository root). */
export const CORE_BUILD_COMMAND = 'cmake --preset release && cmake --build --preset bench';

/**
 * Builds the binary: configures the release tree when it has not been, then builds the target,
 * which recompiles what a changed source touches (and configures again when native/CMakeLists.txt
 * or the list of sources changed). Returns null on success, else what went wrong (the compiler's
 * first error lines, or that cmake is missing).
 * @param {(line: string) => void} log
 * @returns {string | null}
 */
export function buildCore(log) {
  const configured = existsSync(join(root, 'build-cmake', 'release', 'CMakeCache.txt'));
  const steps = configured ? [['--build', '--preset', 'bench']] : [['--preset', 'release'], ['--build', '--preset', 'bench']];
  log(`building ${CORE_BINARY} (${configured ? 'cmake --build --preset bench' : CORE_BUILD_COMMAND})`);
  for (const args of steps) {
    try {
      execFileSync('cmake', args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      if (e.code === 'ENOENT') return 'cmake is not installed (bench/core builds with CMake 3.25 or later and Ninja: CMakePresets.json)';
      const out = `${e.stdout ?? ''}\n${e.stderr ?? ''}`.split('\n').filter((l) => l.trim() !== '');
      const errors = out.filter((l) => /error|not found|CMake Error/i.test(l));
      return (errors.length > 0 ? errors : out.length > 0 ? out : [String(e.message)]).slice(0, 5).join('\n');
    }
  }
  return null;
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

// As a command (npm run bench:core -- [options]): brings the binary up to date (buildCore), then
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
