#!/usr/bin/env bash
# Proves the packed tarball installs into an empty project and loads its prebuild with no compiler:
# builds the prebuild, packs, installs with every build tool made unreachable, then runs a tick.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cd "$root"
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
import { World, WorldConfig, decodePacket } from 'sightline';
const config = WorldConfig.build();
const world = new World(config, { capacity: 16, threads: 1 });
const a = world.spawn({ x: 100, y: 100, z: 0 });
world.spawn({ x: 110, y: 100, z: 0 });
world.addViewer(a);
const result = await world.tick();
const p = decodePacket(result.packets[0].bytes, config);
if (p.updates.length !== 1 || p.updates[0].x !== 110) throw new Error('unexpected packet ' + JSON.stringify(p));
console.log('prebuild loaded from the tarball: one tick, one update, no compiler');
JS
node check.mjs
