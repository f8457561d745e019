/**
 * The Go module (clients/go, docs/go.md) and its client-go sub-module (clients/go/k8slock):
 * - the wire layer committed in clients/go/internal/wire is exactly what oapi-codegen generates
 *   from the document the server serves (`npm run go:generate` refreshes it);
 * - `go vet` is clean in both modules;
 * - `go test ./...` passes in both, each against real API servers it starts in their own
 *   processes (clients/go/internal/testserver: the Node server of this checkout, a fault proxy in
 *   front where a test needs one): the elector's contract (one leader across partitions, terms
 *   grow, the release after the work returned, lost answers settled by sending again, a paused
 *   server, the clock read when asked), the sharded member, BucketOf's vectors, and client-go's
 *   own elector through k8slock. Every Go test function must have run and passed: none skipped.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { checkGo } from "../support/go-install.js";
import { generateKinds, generateWire, go, goModuleDir, k8slockDir, kindsFile, wireFile } from "../support/go-module.js";

const run = promisify(execFile);
const projectRoot = resolve(import.meta.dirname, "../..");
const modules = [
  { module: "clients/go", dir: goModuleDir },
  { module: "clients/go/k8slock", dir: k8slockDir },
];

/** The Test functions declared in a module's own packages (not in a nested module). */
function declaredTests(dir: string, nested: string[]): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory() && !nested.includes(path)) walk(path);
      else if (entry.name.endsWith("_test.go")) {
        for (const m of readFileSync(path, "utf8").matchAll(/^func (Test\w+)\(t \*testing\.T\)/gm)) out.push(m[1]!);
      }
    }
  };
  walk(dir);
  return out.sort();
}

interface TestEvent {
  Action: string;
  Package?: string;
  Test?: string;
  Output?: string;
}

describe("the Go module", () => {
  it("commits the wire layer oapi-codegen generates from the served document", async () => {
    const generated = await generateWire();
    expect(
      generated === readFileSync(wireFile, "utf8"),
      "clients/go/internal/wire/wire.gen.go differs from what the served document generates: run `npm run go:generate`",
    ).toBe(true);
    expect(
      generateKinds() === readFileSync(kindsFile, "utf8"),
      "clients/go/kinds.gen.go differs from the server's problem kinds: run `npm run go:generate`",
    ).toBe(true);
  }, 600_000);

  it.each(modules)(
    "go vet is clean in $module",
    async ({ dir }) => {
      await checkGo("the Go module's tests", [1, 26]);
      await go(["vet", "./..."], dir);
    },
    600_000,
  );

  it.each(modules)(
    "go test passes in $module against API servers it starts, every test run",
    async ({ dir }) => {
      const nested = dir === goModuleDir ? [k8slockDir] : [];
      const result = await run("go", ["test", "-json", "-count=1", "./..."], {
        cwd: dir,
        env: { ...process.env, CGO_ENABLED: "0", LEASEHOLD_REPO: projectRoot },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 600_000,
      }).catch((error: { stdout?: string; stderr?: string; message: string }) => ({
        stdout: error.stdout ?? "",
        stderr: `${error.stderr ?? ""}\n${error.message}`,
      }));
      const events = result.stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as TestEvent);
      const outcome = (action: string) =>
        events.filter((e) => e.Test && !e.Test.includes("/") && e.Action === action).map((e) => e.Test!);
      const failed = outcome("fail");
      const output = events
        .filter((e) => e.Output && (failed.includes(e.Test ?? "") || !e.Test))
        .map((e) => e.Output)
        .join("");
      expect(failed, output || result.stderr).toEqual([]);
      expect(outcome("skip")).toEqual([]);
      expect(outcome("pass").sort(), result.stderr).toEqual(declaredTests(dir, nested));
    },
    600_000,
  );
});
