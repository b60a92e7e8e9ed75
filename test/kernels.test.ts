import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// test/helpers/digest-world.mjs: a seeded 150-tick world on 2 threads; prints the kernels in use
// and a SHA-256 of every packet's bytes in order.
const digestWorld = join(root, 'test', 'helpers', 'digest-world.mjs');
const entry = join(root, 'dist', 'lib', 'index.js');

function runWorld(env: Record<string, string | undefined>): { kernels: string; profileGuided: boolean; packets: number; records: number; digest: string } {
  const r = spawnSync(process.execPath, [digestWorld, entry], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
  if (r.status !== 0) throw new Error(`child failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

describe('vector and portable kernels', () => {
  it('write the same packets, byte for byte; SIGHTLINE_SIMD=off selects the portable ones', () => {
    const portable = runWorld({ SIGHTLINE_SIMD: 'off' });
    const native = runWorld({ SIGHTLINE_SIMD: undefined });
    expect(portable.kernels).toBe('portable');
    // 'avx512' where this CPU has AVX-512; on other CPUs both runs use the portable loops.
    expect(['avx512', 'portable']).toContain(native.kernels);
    expect(portable.packets).toBeGreaterThan(40_000);
    expect(portable.records).toBeGreaterThan(1_000_000);
    expect(native.packets).toBe(portable.packets);
    expect(native.digest).toBe(portable.digest);
    expect(typeof native.profileGuided).toBe('boolean');
  });

  it('SIGHTLINE_SIMD is read in any case, blanks around it ignored', () => {
    const kernelsWith = (value: string): string => {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', `import { kernels } from ${JSON.stringify(entry)}; console.log(kernels)`], {
        encoding: 'utf8',
        env: { ...process.env, SIGHTLINE_SIMD: value },
      });
      if (r.status !== 0) throw new Error(r.stderr);
      return r.stdout.trim();
    };
    for (const off of [' Off ', 'NO', '\t0\n', 'false']) expect(kernelsWith(off)).toBe('portable');
    expect(['avx512', 'portable']).toContain(kernelsWith('on'));
  });
});
