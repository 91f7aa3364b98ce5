// What test/support/global-setup.ts provides to every test file through vitest's `inject`.
declare module 'vitest' {
  export interface ProvidedContext {
    runId: string;
  }
}
export {};
