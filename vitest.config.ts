import { join } from "node:path";
import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  // The package's own name resolves to the sources, as tsconfig's paths do for the typecheck, so
  // tests can run the examples the docs show (examples/fencing/) exactly as users import them.
  resolve: {
    alias: [
      { find: /^leasehold$/, replacement: join(import.meta.dirname, "src/index.ts") },
      { find: /^leasehold\/(.*)$/, replacement: `${join(import.meta.dirname, "src")}/$1.ts` },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    // test/workers/ runs inside workerd under its own config (test/workers/vitest.config.ts).
    exclude: [...configDefaults.exclude, "test/workers/**"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Real servers (dynalite, fake-gcs-server, ...) start once for the whole run: test/servers/.
    globalSetup: ["test/servers/global-setup.ts"],
  },
});
