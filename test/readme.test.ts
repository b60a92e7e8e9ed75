// README's quick-start code is a program a user can paste: it type-checks under the tsconfig that
// `tsc --init` writes (strict, noUncheckedIndexedAccess, exactOptionalPropertyTypes, nodenext),
// against the package's published types, and runs.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

// The README's TypeScript blocks, in order.
function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

const work = mkdtempSync(join(tmpdir(), 'sightline-readme-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('README', () => {
  it('has a TypeScript quick start', () => {
    expect(tsBlocks(readFileSync(join(root, 'README.md'), 'utf8')).length).toBeGreaterThan(0);
  });

  it("the quick-start code type-checks under `tsc --init`'s defaults and runs", () => {
    const [snippet] = tsBlocks(readFileSync(join(root, 'README.md'), 'utf8'));
    // A new project: package.json, `tsc --init`, sightline installed (linked to this checkout,
    // whose dist/ the test setup built), the snippet as its one source file.
    writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'readme-check', private: true, type: 'module' }));
    const init = spawnSync(process.execPath, [tsc, '--init'], { cwd: work, encoding: 'utf8' });
    expect(init.status, init.stdout + init.stderr).toBe(0);
    const tsconfig = readFileSync(join(work, 'tsconfig.json'), 'utf8');
    expect(tsconfig).toMatch(/"strict": true/);
    expect(tsconfig).toMatch(/"noUncheckedIndexedAccess": true/);
    mkdirSync(join(work, 'node_modules'));
    symlinkSync(root, join(work, 'node_modules', 'sightline'), 'dir');
    writeFileSync(join(work, 'index.ts'), snippet);
    const build = spawnSync(process.execPath, [tsc, '-p', '.', '--outDir', 'out'], { cwd: work, encoding: 'utf8' });
    expect(build.status, `tsc reported:\n${build.stdout}${build.stderr}`).toBe(0);
    expect(readdirSync(join(work, 'out'))).toContain('index.js');
    const run = spawnSync(process.execPath, [join(work, 'out', 'index.js')], { cwd: work, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^tick 1: 0 updates$/m);
  });
});
