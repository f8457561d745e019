import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
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
