import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Runs a CommonJS snippet in a fresh node, in the package root (so `sightline` resolves to it by name). */
function runCjs(body: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--input-type=commonjs', '-e', body], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('package entry points', () => {
  it('CommonJS code can require every entry point by name (Node 20.19+ loads ES modules through require)', () => {
    const r = runCjs(`
      const s = require('sightline');
      const net = require('sightline/net');
      const browser = require('sightline/net/browser');
      const decode = require('sightline/decode');
      const w = new s.World(s.WorldConfig.build(), { capacity: 4, threads: 1 });
      const id = w.spawn({ x: 10, y: 10, z: 0 });
      w.close();
      console.log(typeof net.UdpServer, typeof browser.ClientWorld, typeof decode.decodePacket, id);
      // The entry points without the addon carry the error class and the unit conversions too.
      for (const m of [net, browser, decode]) {
        if (m.SightlineError !== s.SightlineError || m.toMeters(2048) !== 2 || m.toRaw(2) !== 2048 || m.RAW_PER_METER !== 1024 || m.FRAC_BITS !== 10) throw new Error('missing exports');
      }
    `);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('function function function 0');
  });
});
