/**
 * The package's public surface: every subpath export points at a source module that exists,
 * with `types` first; tsconfig `paths` (what the tests and examples compile against) agree with
 * `exports` (what users get); and every error class is exported, with its guard, by the entry
 * whose code throws it. test/public-surface.test.ts pins each entry's names. `publint --strict`
 * runs in `npm test` on the built package.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  exports: Record<string, string | { types: string; default: string }>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const tsconfig = JSON.parse(readFileSync(join(root, "tsconfig.json"), "utf8")) as {
  compilerOptions: { paths: Record<string, string[]> };
};

/** `./dist/a/b.js` -> `src/a/b.ts` */
const sourceOf = (dist: string) => dist.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts");

/** Resolves `leasehold/...` through tsconfig paths (one `*` at most), as tsc does. */
function resolvePath(specifier: string): string | undefined {
  for (const [pattern, [target]] of Object.entries(tsconfig.compilerOptions.paths)) {
    if (!target) continue;
    if (!pattern.includes("*")) {
      if (pattern === specifier) return target.replace(/^\.\//, "");
      continue;
    }
    const [head, tail] = pattern.split("*") as [string, string];
    if (specifier.startsWith(head) && specifier.endsWith(tail)) {
      const star = specifier.slice(head.length, specifier.length - tail.length);
      return target.replace("*", star).replace(/^\.\//, "");
    }
  }
  return undefined;
}

const entries = Object.entries(pkg.exports).filter(([key]) => key !== "./package.json");

it("every export names types first, then the build of a source module that exists", () => {
  for (const [key, value] of entries) {
    expect(typeof value, key).toBe("object");
    const target = value as { types: string; default: string };
    expect(Object.keys(target), key).toEqual(["types", "default"]);
    expect(target.types, key).toBe(target.default.replace(/\.js$/, ".d.ts"));
    expect(existsSync(join(root, sourceOf(target.default))), `${key} -> ${sourceOf(target.default)}`).toBe(true);
  }
});

it("tsconfig paths resolve each export to the same source module, and name no other", () => {
  for (const [key, value] of entries) {
    const specifier = key === "." ? "leasehold" : `leasehold/${key.slice(2)}`;
    expect(resolvePath(specifier), specifier).toBe(sourceOf((value as { default: string }).default));
  }
  const exported = new Set(entries.map(([key]) => (key === "." ? "leasehold" : `leasehold/${key.slice(2)}`)));
  for (const pattern of Object.keys(tsconfig.compilerOptions.paths)) {
    if (pattern.includes("*")) {
      expect([...exported].some((e) => resolvePath(e) !== undefined && e.startsWith(pattern.split("*")[0] ?? ""))).toBe(
        true,
      );
    } else {
      expect(exported.has(pattern), pattern).toBe(true);
    }
  }
});

it("every optional peer is declared optional with a range, not a pinned version", () => {
  for (const [name, range] of Object.entries(pkg.peerDependencies)) {
    expect(pkg.peerDependenciesMeta[name]?.optional, name).toBe(true);
    expect(range, name).not.toMatch(/^\d+\.\d+\.\d+$/);
  }
});

it("every error class is exported with a guard that works without instanceof, from the entry that throws it", async () => {
  const errors = await import("../src/errors.js");
  const entryErrors: Array<[string, Record<string, unknown>]> = [];
  for (const [, value] of entries) {
    const module = (await import(`../${sourceOf((value as { default: string }).default)}`)) as Record<string, unknown>;
    for (const name of Object.keys(module).filter((n) => /^[A-Z]\w*Error$/.test(n))) entryErrors.push([name, module]);
  }
  const exported = new Set(entryErrors.map(([name]) => name));
  // Every class in src/errors.ts but ReleaseRefusedError (leasehold release's own, src/cli/) has an entry.
  for (const name of Object.keys(errors).filter((n) => /^[A-Z]\w*Error$/.test(n) && n !== "ReleaseRefusedError")) {
    expect(exported.has(name), `${name} is exported by an entry`).toBe(true);
  }
  for (const name of exported) {
    if (name === "LeaseholdError") continue;
    // The guard is exported beside its class by at least one entry (a fence helper re-exports
    // leasehold/fencing's errors, not their guards).
    const guard = entryErrors.map(([, module]) => module[`is${name}`]).find((g) => typeof g === "function") as
      | ((e: unknown) => boolean)
      | undefined;
    expect(typeof guard, `is${name} beside ${name}`).toBe("function");
    // A look-alike from another copy of the package: same name, no shared prototype.
    const foreign = Object.assign(new Error("x"), { name });
    expect(guard?.(foreign), name).toBe(true);
    expect(errors.isLeaseholdError(foreign), name).toBe(true);
    expect(guard?.(new Error("x")), name).toBe(false);
  }
  const { LeaseholdError, LeaseStoreError } = await import("../src/errors.js");
  const error = new LeaseStoreError("x", { ambiguous: true, cause: new Error("root") });
  expect(error).toBeInstanceOf(LeaseholdError);
  expect((error.cause as Error).message).toBe("root");
});
