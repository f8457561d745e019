/**
 * docs/design.md is the authority on how the code works, and comments cite its sections: every
 * citation ("docs/design.md §3", "§3, §4") must name a section that exists.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.name === "node_modules"
      ? []
      : d.isDirectory()
        ? files(join(dir, d.name))
        : /\.(ts|md)$/.test(d.name)
          ? [join(dir, d.name)]
          : [],
  );
}

it("every comment that cites docs/design.md cites a section that exists", () => {
  const design = readFileSync(join(root, "docs/design.md"), "utf8");
  const sections = new Set([...design.matchAll(/^## §(\d+) /gm)].map((m) => m[1]));
  expect(sections.size).toBeGreaterThan(5);
  const missing: string[] = [];
  let citations = 0;
  for (const file of ["src", "test", "bench", "docs", "examples"].flatMap((d) => files(join(root, d)))) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/docs\/design\.md\s*((?:§\d+(?:,\s*)?)+)/g)) {
      for (const [, n] of (m[1] ?? "").matchAll(/§(\d+)/g)) {
        citations++;
        if (!sections.has(n ?? "")) missing.push(`${relative(root, file)}: §${n}`);
      }
    }
  }
  expect(citations).toBeGreaterThan(10);
  expect(missing).toEqual([]);
  // The shared direction page lives outside the repository: citing it leaves a newcomer nowhere.
  expect(text(root, `${"DESIGN"}.md`).filter((f) => f !== "test/design-doc.test.ts")).toEqual([]);
});

/** No comment cites the design by a name that is not in the repository. */
function text(dir: string, needle: string): string[] {
  return ["src", "test", "bench", "examples"]
    .flatMap((d) => files(join(dir, d)))
    .filter((f) => readFileSync(f, "utf8").includes(needle))
    .map((f) => relative(dir, f));
}
