/**
 * `npm run bench`: runs every `bench/*.bench.ts` (or those named on the command line) one after
 * the other, each printing its Markdown tables; every table is also written as JSON under
 * bench/results/. Benchmarks report, they never assert.
 */
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BenchModule, Table } from "./table.js";
import { printTable } from "./table.js";

const dir = import.meta.dirname;
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();

const results: Record<string, Table[]> = {};
console.log(
  `# leasehold benchmarks\n\n${new Date().toISOString()}, Node ${process.version}, ${process.platform}/${process.arch}\n`,
);
for (const file of files) {
  const mod = (await import(join(dir, file))) as BenchModule;
  const tables = await mod.run();
  results[file] = tables;
  for (const t of tables) console.log(printTable(t));
}
mkdirSync(join(dir, "results"), { recursive: true });
const out = join(dir, "results", `bench-${Date.now()}.json`);
writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), node: process.version, results }, null, 2));
writeFileSync(join(dir, "results", "latest.json"), JSON.stringify({ at: new Date().toISOString(), results }, null, 2));
console.log(`results: ${out}`);
