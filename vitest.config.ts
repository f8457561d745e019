import { readFileSync } from "node:fs";
import { join } from "node:path";
import { configDefaults, defineConfig } from "vitest/config";

// The package's own name resolves to the sources of each export (as tsconfig's paths do for the
// typecheck), so tests can run the examples the docs show exactly as users import them.
const { exports } = JSON.parse(readFileSync(join(import.meta.dirname, "package.json"), "utf8")) as {
  exports: Record<string, string | { default: string }>;
};
const alias = Object.entries(exports).flatMap(([key, target]) =>
  typeof target === "object"
    ? [
        {
          find: new RegExp(`^leasehold${key === "." ? "" : `/${key.slice(2)}`}$`),
          replacement: join(import.meta.dirname, target.default.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")),
        },
      ]
    : [],
);

export default defineConfig({
  resolve: { alias },
  test: {
    include: ["test/**/*.test.ts"],
    // test/workers/ runs inside workerd under its own config (test/workers/vitest.config.ts).
    exclude: [...configDefaults.exclude, "test/workers/**"],
    // Three files at a time whatever the core count (vitest's default is one on 2 cores): most of
    // a file's time is spent waiting on servers, child processes and timers, not on the CPU, so
    // three at once nearly halve the run; process tests are written to pass on busy cores.
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Real servers (dynalite, fake-gcs-server, ...) start once for the whole run: test/servers/.
    // The console's bundled assets first (test/support/console-assets.ts), then the servers.
    globalSetup: ["test/support/console-assets.ts", "test/servers/global-setup.ts"],
  },
});
