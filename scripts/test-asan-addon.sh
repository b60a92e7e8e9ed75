#!/usr/bin/env bash
# Runs the whole vitest suite against the AddressSanitizer + UndefinedBehaviorSanitizer build of
# the addon (npm run build:asan-addon: cmake-js, native/CMakeLists.txt, into build-cmake/addon-asan),
# loaded through SIGHTLINE_ADDON. Every process the tests start inherits the same environment.
#
# node itself is not instrumented, so the sanitizer runtimes of the compiler that built the addon
# are preloaded (they must come first). Leak detection is off: node leaves memory to the operating
# system at exit, which LeakSanitizer would report. Any finding aborts the process that made it,
# which fails its test: AddressSanitizer halts on its first error, and UndefinedBehaviorSanitizer
# findings are fatal (-fno-sanitize-recover=undefined).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-cmake/addon-asan"
addon="$build/Debug/sightline.node"
if [ ! -f "$addon" ]; then
  echo "test-asan-addon: $addon is missing: run npm run build:asan-addon first" >&2
  exit 1
fi
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
runtimes=()
for lib in libasan.so libubsan.so; do
  path=$("$cxx" -print-file-name="$lib")
  if [ ! -f "$path" ]; then
    echo "test-asan-addon: $cxx has no $lib (it answered $path): the addon needs that compiler's sanitizer runtimes" >&2
    exit 1
  fi
  runtimes+=("$(realpath "$path")")
done

cd "$root"
export SIGHTLINE_ADDON="$addon"
export LD_PRELOAD="${runtimes[0]}:${runtimes[1]}"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "vitest against $SIGHTLINE_ADDON (LD_PRELOAD=$LD_PRELOAD)"
# The instrumented addon runs the pass several times slower than the release build (about ten
# times on a busy 2-core machine): a test's default time limit is 10 minutes here, not 1.
exec node_modules/.bin/vitest run --testTimeout 600000 --hookTimeout 600000 "$@"
