/**
 * `npm run chaos`: longer seeded chaos runs than the test suite's, printing Markdown tables.
 *
 *   npm run chaos                                   500 elector scenarios per backend from seed 1,
 *                                                   then 1000 sharded scenarios per backend
 *   npm run chaos -- --plain                        only the elector scenarios
 *   npm run chaos -- --sharded                      only the sharded scenarios (npm run chaos:sharded)
 *   npm run chaos -- --runs 2000 --from 7000        other seeds (--runs applies to each kind)
 *   npm run chaos -- --seed 123 --backend sqlite    replay one elector scenario with its timeline
 *   npm run chaos -- --sharded --seed 7             replay one sharded scenario
 *
 * Exits 1 when any scenario found a violation.
 */
import { parseArgs } from "node:util";
import { type Backend, runScenario } from "./scenario.js";
import { runShardedScenario } from "./sharded-scenario.js";
import { addResult, emptyTotals, renderShardedTotals, renderTotals, type Totals } from "./summary.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string" },
    sharded: { type: "boolean", default: false },
    plain: { type: "boolean", default: false },
    from: { type: "string", default: "1" },
    seed: { type: "string" },
    backend: { type: "string" },
  },
});

if (values.sharded && values.plain) {
  console.error("--sharded and --plain exclude each other (give neither to run both kinds)");
  process.exit(2);
}
const backends: Backend[] =
  values.backend === undefined ? ["memory", "sqlite"] : [values.backend === "sqlite" ? "sqlite" : "memory"];
const from = Number(values.from);

if (values.seed !== undefined) {
  process.exit((await replay(Number(values.seed), values.sharded)) ? 1 : 0);
}
let violations = 0;
if (!values.sharded) violations += await runMany(Number(values.runs ?? 500), runScenario, renderTotals, "");
if (!values.plain) {
  violations += await runMany(Number(values.runs ?? 1000), runShardedScenario, renderShardedTotals, "--sharded ");
}
process.exit(violations > 0 ? 1 : 0);

/** Replays one scenario of either kind with its timeline; true when it found a violation. */
async function replay(seed: number, sharded: boolean): Promise<boolean> {
  let failed = false;
  for (const backend of backends) {
    const r = sharded
      ? await runShardedScenario(seed, backend, { verbose: true })
      : await runScenario(seed, backend, { verbose: true });
    console.log(`# ${sharded ? "sharded " : ""}seed ${seed} on ${backend}: ${r.summary}\n`);
    console.log(r.timeline.join("\n"));
    console.log(`\nstats: ${JSON.stringify(r.stats)}`);
    console.log(r.violations.length === 0 ? "no violations" : `VIOLATIONS:\n${r.violations.join("\n")}`);
    failed ||= r.violations.length > 0;
  }
  return failed;
}

/**
 * Runs `runs` scenarios of one kind per backend, prints their table, returns the violation count.
 * `replay` is the flag that replays one of them (`--sharded` or nothing).
 */
async function runMany<S>(
  runs: number,
  scenario: (
    seed: number,
    backend: Backend,
  ) => Promise<{ seed: number; backend: Backend; violations: string[]; stats: S & { faults: Record<string, number> } }>,
  render: (totals: Map<string, Totals<S>>, wallMs: number) => string,
  replay: string,
): Promise<number> {
  const started = performance.now();
  const totals = new Map<string, Totals<S>>(backends.map((b) => [b, emptyTotals<S>()]));
  for (let i = 0; i < runs; i++) {
    for (const backend of backends) {
      const r = await scenario(from + i, backend);
      addResult(totals.get(backend)!, r);
      if (r.violations.length > 0) {
        console.error(`seed ${r.seed} (${backend}): ${r.violations.join("; ")}`);
        console.error(`  replay: npm run chaos -- ${replay}--seed ${r.seed} --backend ${backend}`);
      }
    }
  }
  console.log(render(totals, performance.now() - started));
  return [...totals.values()].reduce((n, t) => n + t.violations, 0);
}
