#!/usr/bin/env bash
# Proves the packed tarball installs into an empty project and loads its prebuild with no compiler:
# builds the prebuild (profile-guided: scripts/build-pgo.mjs), packs, installs with every build tool
# made unreachable, then runs a tick, and a 150-tick world whose packets must be byte for byte those
# of the addon the package loaded before (test/helpers/digest-world.mjs; in CI, the plain build the
# tests ran on).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cd "$root"
# The addon loaded before prebuildify rebuilds it (build/Release, or prebuilds/ when a previous
# prebuildify moved the build away).
local_run=$(node test/helpers/digest-world.mjs dist/lib/index.js | tail -n 1)
npm run --silent prebuildify >/dev/null
tarball=$(npm pack --silent --pack-destination "$work" | tail -n 1)
echo "packed $tarball ($(du -h "$work/$tarball" | cut -f1))"

mkdir "$work/app" && cd "$work/app"
npm init -y >/dev/null
# No compiler, no make, no headers, no node-gyp: a build attempt would fail loudly.
CC=/nonexistent/cc CXX=/nonexistent/c++ MAKE=/nonexistent/make \
  npm_config_node_gyp=/nonexistent/node-gyp npm_config_nodedir=/nonexistent \
  npm install --no-audit --no-fund --silent "$work/$tarball"
if [ -d node_modules/sightline/build ]; then
  echo "FAIL: the install compiled the addon instead of loading the prebuild" >&2
  exit 1
fi
cat > check.mjs <<'JS'
import { World, WorldConfig, decodePacket, profileGuided } from 'sightline';
if (profileGuided !== true) throw new Error('the prebuild is not the profile-guided build');
const config = WorldConfig.build();
const world = new World(config, { capacity: 16, threads: 1 });
const a = world.spawn({ x: 100, y: 100, z: 0 });
world.spawn({ x: 110, y: 100, z: 0 });
world.addViewer(a);
const result = await world.tick();
const p = decodePacket(result.packets[0].bytes, config);
if (p.updates.length !== 1 || p.updates[0].x !== 110) throw new Error('unexpected packet ' + JSON.stringify(p));
console.log('profile-guided prebuild loaded from the tarball: one tick, one update, no compiler');
// The tools' entry points reach the library through the package's own name.
const { createHerd } = await import('sightline/herd');
const { QUALITY_STRATEGIES } = await import('sightline/quality');
if (typeof createHerd !== 'function' || QUALITY_STRATEGIES.length !== 3) throw new Error('sightline/herd or sightline/quality did not load');
JS
node check.mjs
echo "installed command: $(./node_modules/.bin/sightline --version)"
packed_run=$(node "$root/test/helpers/digest-world.mjs" "$work/app/node_modules/sightline/dist/lib/index.js" | tail -n 1)
digest() { sed -E 's/.*"digest":"([0-9a-f]+)".*/\1/' <<<"$1"; }
guided() { sed -E 's/.*"profileGuided":(true|false).*/\1/' <<<"$1"; }
echo "150-tick world: local build (profile-guided: $(guided "$local_run")) $(digest "$local_run")"
echo "                packed prebuild (profile-guided: $(guided "$packed_run")) $(digest "$packed_run")"
if [ "$(digest "$local_run")" != "$(digest "$packed_run")" ]; then
  echo "FAIL: the packed prebuild wrote different packets from the local build" >&2
  exit 1
fi
