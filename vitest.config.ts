import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The package's own entry points, as the tools import them, resolved to the sources (tsconfig.json's
// "paths" does the same for the type check).
const entry = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^sightline$/, replacement: entry('./lib/index.ts') },
      { find: /^sightline\/net$/, replacement: entry('./lib/net/index.ts') },
      { find: /^sightline\/net\/browser$/, replacement: entry('./lib/net/browser.ts') },
      { find: /^sightline\/decode$/, replacement: entry('./lib/decode.ts') },
      { find: /^sightline\/herd$/, replacement: entry('./tools/herd/index.ts') },
      { find: /^sightline\/quality$/, replacement: entry('./tools/quality/index.ts') },
    ],
  },
  test: {
    // Native addons crash the threads pool: every test file runs in its own forked process.
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
