/**
 * `npm run chaos`: a longer seeded chaos run than the test suite's, printing a Markdown table.
 *
 *   npm run chaos                                   500 scenarios per backend from seed 1
 *   npm run chaos -- --runs 2000 --from 7000        other seeds
 *   npm run chaos -- --seed 123 --backend sqlite    replay one scenario with its timeline
 *
 * Exits 1 when any scenario found a violation.
 */
import { parseArgs } from "node:util";
import { type Backend, runScenario } from "./scenario.js";
import { addResult, type ChaosTotals, emptyTotals, renderTotals } from "./summary.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "500" },
    from: { type: "string", default: "1" },
    seed: { type: "string" },
    backend: { type: "string" },
  },
});

const backends: Backend[] =
  values.backend === undefined ? ["memory", "sqlite"] : [values.backend === "sqlite" ? "sqlite" : "memory"];

if (values.seed !== undefined) {
  const seed = Number(values.seed);
  let failed = false;
  for (const backend of backends) {
    const r = await runScenario(seed, backend, { verbose: true });
    console.log(`# seed ${seed} on ${backend}: ${r.summary}\n`);
    console.log(r.timeline.join("\n"));
    console.log(`\nstats: ${JSON.stringify(r.stats)}`);
    console.log(r.violations.length === 0 ? "no violations" : `VIOLATIONS:\n${r.violations.join("\n")}`);
    failed ||= r.violations.length > 0;
  }
  process.exit(failed ? 1 : 0);
}

const runs = Number(values.runs);
const from = Number(values.from);
const started = performance.now();
const totals = new Map<string, ChaosTotals>(backends.map((b) => [b, emptyTotals()]));
for (let i = 0; i < runs; i++) {
  for (const backend of backends) {
    const r = await runScenario(from + i, backend);
    addResult(totals.get(backend)!, r);
    if (r.violations.length > 0) {
      console.error(`seed ${r.seed} (${backend}): ${r.violations.join("; ")}`);
      console.error(`  replay: npm run chaos -- --seed ${r.seed} --backend ${backend}`);
    }
  }
}
console.log(renderTotals(totals, performance.now() - started));
const violations = [...totals.values()].reduce((n, t) => n + t.violations, 0);
process.exit(violations > 0 ? 1 : 0);
