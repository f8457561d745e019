/**
 * `npm run chaos`: longer seeded chaos runs than the test suite's, printing Markdown tables.
 *
 *   npm run chaos                                   500 elector scenarios per mode and backend from
 *                                                   seed 1, then 1000 sharded scenarios per backend
 *   npm run chaos -- --plain                        only the elector scenarios (not sharded)
 *   npm run chaos -- --sharded                      only the sharded scenarios (npm run chaos:sharded)
 *   npm run chaos -- --mode bound                   elector scenarios of one mode: plain, bound,
 *                                                   default or mixed (default all; scenario.ts)
 *   npm run chaos -- --api --runs 100               elector scenarios through the HTTP API's app
 *                                                   (api-world.ts) instead of straight to the store
 *   npm run chaos -- --runs 2000 --from 7000        other seeds (--runs applies to each kind)
 *   npm run chaos -- --seed 123 --mode bound --backend sqlite [--api]
 *                                                   replay one elector scenario with its timeline
 *                                                   (every mode and backend not named)
 *   npm run chaos -- --sharded --seed 7             replay one sharded scenario
 *
 * Exits 1 when any scenario found a violation.
 */
import { parseArgs } from "node:util";
import { type Backend, MODES, type Mode, runScenario } from "./scenario.js";
import { runShardedScenario } from "./sharded-scenario.js";
import { addResult, emptyTotals, renderShardedTotals, renderTotals, type Totals } from "./summary.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string" },
    sharded: { type: "boolean", default: false },
    plain: { type: "boolean", default: false },
    mode: { type: "string" },
    api: { type: "boolean", default: false },
    from: { type: "string", default: "1" },
    seed: { type: "string" },
    backend: { type: "string" },
  },
});

if (values.sharded && values.plain) {
  console.error("--sharded and --plain exclude each other (give neither to run both kinds)");
  process.exit(2);
}
if (values.mode !== undefined && !MODES.includes(values.mode as Mode)) {
  console.error(`--mode is one of ${MODES.join(", ")} (give none for all of them)`);
  process.exit(2);
}
if (values.sharded && (values.mode !== undefined || values.api)) {
  console.error("--mode and --api are for the elector scenarios, not --sharded");
  process.exit(2);
}
const backends: Backend[] =
  values.backend === undefined ? ["memory", "sqlite"] : [values.backend === "sqlite" ? "sqlite" : "memory"];
const modes: Mode[] = values.mode === undefined ? [...MODES] : [values.mode as Mode];
const from = Number(values.from);

/** One column of a run: a scenario kind on one backend (and, for elector scenarios, one mode). */
interface Lane<S> {
  label: string;
  run: (seed: number, verbose: boolean) => Promise<Outcome<S>>;
  /** The flags that replay one of its seeds, before `--seed`. */
  replay: string;
}
type Outcome<S> = {
  seed: number;
  backend: Backend;
  mode?: Mode;
  summary: string;
  violations: string[];
  timeline: string[];
  stats: S & { faults: Record<string, number> };
};

const electorLanes = modes.flatMap((mode) =>
  backends.map((backend) => ({
    label: `${mode} ${backend}${values.api ? " api" : ""}`,
    run: (seed: number, verbose: boolean) => runScenario(seed, backend, { mode, verbose, api: values.api }),
    replay: `--mode ${mode} --backend ${backend}${values.api ? " --api" : ""}`,
  })),
);
const shardedLanes = backends.map((backend) => ({
  label: backend,
  run: (seed: number, verbose: boolean) => runShardedScenario(seed, backend, { verbose }),
  replay: `--sharded --backend ${backend}`,
}));

if (values.seed !== undefined) {
  const lanes: Array<Lane<unknown>> = values.sharded ? shardedLanes : electorLanes;
  process.exit((await replay(Number(values.seed), lanes)) ? 1 : 0);
}
let violations = 0;
if (!values.sharded) violations += await runMany(Number(values.runs ?? 500), electorLanes, renderTotals);
if (!values.plain) violations += await runMany(Number(values.runs ?? 1000), shardedLanes, renderShardedTotals);
process.exit(violations > 0 ? 1 : 0);

/** Replays one seed in each lane with its timeline; true when any found a violation. */
async function replay(seed: number, lanes: Array<Lane<unknown>>): Promise<boolean> {
  let failed = false;
  for (const lane of lanes) {
    const r = await lane.run(seed, true);
    console.log(`# seed ${seed}, ${values.sharded ? "sharded " : ""}${lane.label}: ${r.summary}\n`);
    console.log(r.timeline.join("\n"));
    console.log(`\nstats: ${JSON.stringify(r.stats)}`);
    console.log(r.violations.length === 0 ? "no violations" : `VIOLATIONS:\n${r.violations.join("\n")}`);
    failed ||= r.violations.length > 0;
  }
  return failed;
}

/** Runs `runs` seeds in every lane, prints their table (a column per lane), returns the violation count. */
async function runMany<S>(
  runs: number,
  lanes: Array<Lane<S>>,
  render: (totals: Map<string, Totals<S>>, wallMs: number) => string,
): Promise<number> {
  const started = performance.now();
  const totals = new Map<string, Totals<S>>(lanes.map((l) => [l.label, emptyTotals<S>()]));
  for (let i = 0; i < runs; i++) {
    for (const lane of lanes) {
      const r = await lane.run(from + i, false);
      addResult(totals.get(lane.label)!, r);
      if (r.violations.length > 0) {
        console.error(`seed ${r.seed} (${lane.label}): ${r.violations.join("; ")}`);
        console.error(`  replay: npm run chaos -- --seed ${r.seed} ${lane.replay}`);
      }
    }
  }
  console.log(render(totals, performance.now() - started));
  return [...totals.values()].reduce((n, t) => n + t.violations, 0);
}
