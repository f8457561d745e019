/**
 * `npm run chaos`: a longer seeded chaos run than the test suite's, printing a Markdown table.
 *
 *   npm run chaos                                   500 scenarios per backend from seed 1
 *   npm run chaos -- --runs 2000 --from 7000        other seeds
 *   npm run chaos -- --seed 123 --backend sqlite    replay one scenario with its timeline
 *   npm run chaos -- --sharded                      sharded scenarios (default 1000 per backend)
 *   npm run chaos:sharded                           the same
 *   npm run chaos -- --sharded --seed 7             replay one sharded scenario
 *
 * Exits 1 when any scenario found a violation.
 */
import { parseArgs } from "node:util";
import { type Backend, runScenario } from "./scenario.js";
import { runShardedScenario } from "./sharded-scenario.js";
import {
  addResult,
  addShardedResult,
  type ChaosTotals,
  emptyShardedTotals,
  emptyTotals,
  renderShardedTotals,
  renderTotals,
  type ShardedTotals,
} from "./summary.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string" },
    sharded: { type: "boolean", default: false },
    from: { type: "string", default: "1" },
    seed: { type: "string" },
    backend: { type: "string" },
  },
});

const backends: Backend[] =
  values.backend === undefined ? ["memory", "sqlite"] : [values.backend === "sqlite" ? "sqlite" : "memory"];

if (values.sharded) await sharded();

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

const runs = Number(values.runs ?? 500);
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

/** `--sharded`: the same for sharded scenarios (sharded-scenario.ts). Exits. */
async function sharded(): Promise<never> {
  if (values.seed !== undefined) {
    let failed = false;
    for (const backend of backends) {
      const r = await runShardedScenario(Number(values.seed), backend, { verbose: true });
      console.log(`# sharded seed ${values.seed} on ${backend}: ${r.summary}\n`);
      console.log(r.timeline.join("\n"));
      console.log(`\nstats: ${JSON.stringify(r.stats)}`);
      console.log(r.violations.length === 0 ? "no violations" : `VIOLATIONS:\n${r.violations.join("\n")}`);
      failed ||= r.violations.length > 0;
    }
    process.exit(failed ? 1 : 0);
  }
  const count = Number(values.runs ?? 1000);
  const first = Number(values.from);
  const began = performance.now();
  const byBackend = new Map<string, ShardedTotals>(backends.map((b) => [b, emptyShardedTotals()]));
  for (let i = 0; i < count; i++) {
    for (const backend of backends) {
      const r = await runShardedScenario(first + i, backend);
      addShardedResult(byBackend.get(backend)!, r);
      if (r.violations.length > 0) {
        console.error(`seed ${r.seed} (${backend}): ${r.violations.join("; ")}`);
        console.error(`  replay: npm run chaos -- --sharded --seed ${r.seed} --backend ${backend}`);
      }
    }
  }
  console.log(renderShardedTotals(byBackend, performance.now() - began));
  const failures = [...byBackend.values()].reduce((n, t) => n + t.violations, 0);
  process.exit(failures > 0 ? 1 : 0);
}
