// The package's layout: the library (lib/) imports no tool, and the tools (tools/) reach the
// library only through its public entry points, as a user's program does.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PUBLIC_ENTRIES = ['sightline', 'sightline/net', 'sightline/net/browser', 'sightline/decode', 'sightline/package.json'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

// Every module specifier a file imports or re-exports, static or dynamic.
function specifiers(file: string): string[] {
  const src = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of src.matchAll(/^\s*(?:import|export)\s+(?:type\s+)?[^;]*?from\s+'([^']+)'/gm)) out.push(m[1]);
  for (const m of src.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) out.push(m[1]);
  for (const m of src.matchAll(/createRequire\([^)]*\)\(\s*'([^']+)'\s*\)/g)) out.push(m[1]);
  return out;
}

describe('layout', () => {
  it('nothing in lib/ imports a tool, or the package by its own name', () => {
    for (const file of sources(join(root, 'lib'))) {
      for (const s of specifiers(file)) {
        const where = `${relative(root, file)} imports ${s}`;
        expect(s.startsWith('sightline'), where).toBe(false);
        if (s.startsWith('.')) expect(relative(root, join(dirname(file), s)).startsWith('lib'), where).toBe(true);
      }
    }
  });

  it('tools/ reach the library only through its public entry points', () => {
    for (const file of sources(join(root, 'tools'))) {
      for (const s of specifiers(file)) {
        const where = `${relative(root, file)} imports ${s}`;
        if (s.startsWith('.')) {
          expect(relative(root, join(dirname(file), s)).startsWith('tools'), where).toBe(true);
        } else if (s.startsWith('sightline')) {
          expect(PUBLIC_ENTRIES, where).toContain(s);
        }
      }
    }
  });

  it('every public entry point of package.json is built from lib/ (the library) or tools/ (sightline/herd, sightline/quality)', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, { import?: string }> };
    for (const [name, target] of Object.entries(pkg.exports)) {
      if (name === './package.json') continue;
      const file = target.import!;
      if (name === './herd' || name === './quality') expect(file.startsWith('./dist/tools/'), name).toBe(true);
      else expect(file.startsWith('./dist/lib/'), name).toBe(true);
    }
  });

  // Files split by concept: one over 500 lines says why at its top ("Over 500 lines as one file: ...").
  // KNOWN_LONG lists what is still to split, so the list can only shrink.
  const KNOWN_LONG = new Set<string>();
  it('no source file over 500 lines without a reason at its top', () => {
    const exts = /\.(ts|mjs|js|cpp|h|sh)$/;
    const walk = (dir: string): string[] =>
      readdirSync(join(root, dir)).flatMap((f) => {
        const rel = `${dir}/${f}`;
        if (f === 'node_modules' || f === 'vectors') return [];
        return statSync(join(root, rel)).isDirectory() ? walk(rel) : exts.test(f) ? [rel] : [];
      });
    const long: string[] = [];
    for (const file of ['lib', 'tools', 'native', 'bench', 'test', 'scripts'].flatMap(walk)) {
      const text = readFileSync(join(root, file), 'utf8');
      const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
      if (lines > 500 && !text.slice(0, 600).includes('Over 500 lines as one file:') && !KNOWN_LONG.has(file)) long.push(`${file} (${lines} lines)`);
    }
    expect(long).toEqual([]);
  });
});
