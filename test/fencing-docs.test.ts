/**
 * docs/fencing.md shows the files in examples/fencing/ as they are: the tests run those files
 * (fencing-dynamodb, -sqlite, -gcs, -s3, -azure-blob, -http) and the typecheck compiles them, so every TypeScript block of
 * the page is tested code. A block edited in the page alone, or a file changed without the page,
 * fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const doc = readFileSync(join(root, "docs", "fencing.md"), "utf8");
const dir = join(root, "examples", "fencing");
const examples = readdirSync(dir)
  .filter((f) => f.endsWith(".ts"))
  .sort()
  .map((f) => ({ file: `examples/fencing/${f}`, code: readFileSync(join(dir, f), "utf8").trimEnd() }));

it("every TypeScript block of docs/fencing.md is one of the example files, verbatim", () => {
  const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)\n```/g)].map((m) => m[1]);
  const unmatched = blocks.filter((block) => !examples.some((e) => e.code === block));
  expect(unmatched).toEqual([]);
});

it("every example file appears in docs/fencing.md", () => {
  expect(examples.map((e) => e.file)).toEqual([
    "examples/fencing/azure-blob.ts",
    "examples/fencing/dynamodb.ts",
    "examples/fencing/gcs.ts",
    "examples/fencing/http.ts",
    "examples/fencing/leader.ts",
    "examples/fencing/postgres.ts",
    "examples/fencing/s3.ts",
    "examples/fencing/sqlite.ts",
  ]);
  for (const { file, code } of examples) expect(doc, file).toContain(`\`\`\`ts\n${code}\n\`\`\``);
});
