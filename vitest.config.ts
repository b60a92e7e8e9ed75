import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Native addons crash the threads pool: every test file runs in its own forked process.
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
