/**
 * docs/design.md §6: the core runs in Node, workerd and Lambda alike, so only the named Node-bound
 * modules may touch Node APIs.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const nodeBound = [
  /^src\/runtime\/node\.ts$/,
  /^src\/backends\/sqlite\//,
  /^src\/backends\/gcs\/store\.ts$/,
  // S3's ETag is the MD5 of the bytes: the S3 fence computes it (node:crypto) to refuse an ABA.
  /^src\/fencing\/s3\.ts$/,
  /^src\/cli\//,
  /^src\/runtime\/lambda\.ts$/,
];

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? files(join(dir, d.name)) : /\.(ts|js)$/.test(d.name) ? [join(dir, d.name)] : [],
  );
}

it("no Node-only API outside the Node-bound modules", () => {
  const offenders: string[] = [];
  for (const file of files(join(root, "src"))) {
    const path = relative(root, file).split("\\").join("/");
    if (nodeBound.some((p) => p.test(path))) continue;
    // Code only: comments may talk about "the process." freely.
    const text = readFileSync(file, "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/(^|[^:])\/\/.*$/gm, "$1");
    for (const pattern of [
      /from "node:/,
      /import\("node:/,
      /\bprocess\./,
      /\bBuffer\./,
      /\brequire\(/,
      /\bsetImmediate\(/,
    ]) {
      if (pattern.test(text)) offenders.push(`${path}: ${pattern}`);
    }
  }
  expect(offenders).toEqual([]);
});
