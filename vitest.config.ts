import { fileURLToPath } from 'node:url';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

const libs = ['contracts', 'core', 'database', 'messaging', 'paging', 'testing'];

export default defineConfig({
  plugins: [
    // esbuild cannot emit decorator metadata, which Nest's dependency injection needs.
    swc.vite({
      jsc: {
        target: 'es2023',
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      },
    }),
  ],
  resolve: {
    alias: libs.map((lib) => ({
      find: `@tracking/${lib}`,
      replacement: fileURLToPath(new URL(`./libs/${lib}/src/index.ts`, import.meta.url)),
    })),
  },
  test: {
    include: ['apps/*/src/**/*.spec.ts', 'libs/*/src/**/*.spec.ts', 'test/**/*.spec.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30000,
    hookTimeout: 60000,
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
  },
});
