import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// SIGHTLINE_ADDON (lib/binding.ts): a named addon file loads instead of the package's own; a name
// that does not load is ERR_SIGHTLINE_NO_ADDON, naming it.
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'lib', 'index.js');
const digestWorld = join(root, 'test', 'helpers', 'digest-world.mjs');
const require = createRequire(import.meta.url);

// The addon the package loads when SIGHTLINE_ADDON is not set (a prebuild, else build/Release).
const ownAddon = (require('node-gyp-build') as { path(dir: string): string }).path(root);

function run(args: string[], addon: string | undefined, cwd = root): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  if (addon === undefined) delete env.SIGHTLINE_ADDON;
  else env.SIGHTLINE_ADDON = addon;
  const r = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 180_000, env });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// Imports the package and prints the error's code and message, or "loaded" and a tick's packet count.
const probe = [
  '--input-type=module',
  '-e',
  `try {
     const s = await import(${JSON.stringify(entry)});
     const w = new s.World(s.WorldConfig.build(), { capacity: 4, threads: 1 });
     const a = w.spawn({ x: 10, y: 10, z: 0 });
     w.spawn({ x: 12, y: 10, z: 0 });
     w.addViewer(a);
     const r = await w.tick();
     console.log(JSON.stringify({ loaded: true, packets: r.packets.length }));
   } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`,
];

describe('SIGHTLINE_ADDON', () => {
  it('a named addon writes the same packets as the package own, byte for byte (under test:asan-addon: the instrumented one)', () => {
    const digest = (addon: string | undefined) => {
      const r = run([digestWorld, entry], addon);
      if (r.status !== 0) throw new Error(`child failed (${r.status}): ${r.stderr}`);
      return JSON.parse(r.stdout.trim().split('\n').pop()!) as { packets: number; digest: string };
    };
    const named = digest(process.env.SIGHTLINE_ADDON || ownAddon);
    const own = digest(undefined);
    expect(named.packets).toBeGreaterThan(40_000);
    expect(named.digest).toBe(own.digest);
  });

  it('a relative path is resolved against the current directory; an empty value is as if unset', () => {
    const dir = dirname(ownAddon);
    expect(JSON.parse(run(probe, relative(dir, ownAddon), dir).stdout)).toEqual({ loaded: true, packets: 1 });
    expect(JSON.parse(run(probe, '').stdout)).toEqual({ loaded: true, packets: 1 });
  });

  it('a path that does not load, or loads something other than the addon, is ERR_SIGHTLINE_NO_ADDON naming it', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'sightline-addon-'));
    try {
      const missing = join(tmp, 'missing.node');
      const garbage = join(tmp, 'garbage.node');
      writeFileSync(garbage, 'not a shared object');
      const other = join(tmp, 'other.cjs');
      writeFileSync(other, 'module.exports = { hello: 1 };');
      for (const [file, says] of [
        [missing, 'did not load as a Node addon'],
        [garbage, 'did not load as a Node addon'],
        [other, "is not sightline's addon"],
      ] as const) {
        const r = run(probe, file);
        const out = JSON.parse(r.stdout) as { code?: string; message?: string };
        expect(out.code, file).toBe('ERR_SIGHTLINE_NO_ADDON');
        expect(out.message).toContain(`SIGHTLINE_ADDON is ${JSON.stringify(file)}`);
        expect(out.message).toContain(says);
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
