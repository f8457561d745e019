/**
 * The seeded chaos budget of `npm test`: 100 scenarios per backend on the manual clock, each a few
 * leases to a few dozen of faults, paused and crashed leaders, wall skew, monotonic clock drift and
 * reordering (scenario.ts).
 * A failure names its seed and the command that replays it with a timeline. CHAOS_SEED_FROM moves
 * the window of seeds (the default is fixed, so CI runs are reproducible).
 */
import { describe, expect, it } from "vitest";
import { type Backend, runScenario, type ScenarioStats } from "./scenario.js";
import { addResult, type ChaosTotals, emptyTotals } from "./summary.js";

const RUNS_PER_BACKEND = 100;
const FROM = Number(process.env.CHAOS_SEED_FROM ?? 1);

async function budget(backend: Backend): Promise<ChaosTotals> {
  const totals = emptyTotals<ScenarioStats>();
  for (let seed = FROM; seed < FROM + RUNS_PER_BACKEND; seed++) {
    const r = await runScenario(seed, backend);
    addResult(totals, r);
    if (r.violations.length > 0) {
      throw new Error(
        `chaos seed ${seed} on ${backend} (${r.summary}) violated safety:\n  ${r.violations.slice(0, 5).join("\n  ")}\n` +
          `replay: npm run chaos -- --seed ${seed} --backend ${backend}`,
      );
    }
  }
  return totals;
}

describe.each(["memory", "sqlite"] as const)("chaos on the manual clock: %s", (backend) => {
  it(`${RUNS_PER_BACKEND} seeded scenarios keep every safety property`, async () => {
    const totals = await budget(backend);
    expect(totals.violations).toBe(0);
    // The budget is only worth something if it exercised what it claims to.
    for (const kind of [
      "pause",
      "crash",
      "reorder",
      "fail-after",
      "lost-response",
      "tail-latency",
      "wall-skew",
      "clock-drift",
    ]) {
      expect(totals.faults.get(kind) ?? 0, `fault kind ${kind}`).toBeGreaterThan(0);
    }
    expect(totals.elections).toBeGreaterThan(totals.scenarios * 2);
    expect(totals.staleWrites, "paused leaders woke and wrote").toBeGreaterThan(0);
    expect(totals.fencedRejected, "and fencing turned some of them away").toBeGreaterThan(0);
  }, 60_000);
});

describe("the checker is not vacuous", () => {
  it("wall clocks skewed beyond maxSkewMs let two candidates be safe at once, and it says so", async () => {
    const found: string[] = [];
    for (let seed = 1; seed <= 60 && found.length === 0; seed++) {
      const r = await runScenario(seed, "memory", { skewFactor: 5 });
      found.push(...r.violations.filter((v) => v.startsWith("two candidates inside their safe windows at once")));
    }
    expect(found.length).toBeGreaterThan(0);
  });

  it("monotonic clocks drifting 3x past the bound safetyMs covers let two candidates be safe at once, and it says so", async () => {
    const found: string[] = [];
    for (let seed = 1; seed <= 60 && found.length === 0; seed++) {
      const r = await runScenario(seed, "memory", { driftFactor: 3 });
      found.push(...r.violations.filter((v) => v.startsWith("two candidates inside their safe windows at once")));
    }
    expect(found.length).toBeGreaterThan(0);
  });

  it("a resource that ignores terms is caught accepting a stale leader's write", async () => {
    const found: string[] = [];
    for (let seed = 1; seed <= 60 && found.length === 0; seed++) {
      const r = await runScenario(seed, "memory", { unfenced: true });
      found.push(...r.violations.filter((v) => /^resource accepted term \d+ from \S+ after term \d+$/.test(v)));
    }
    expect(found.length).toBeGreaterThan(0);
  });

  it("a seed replays exactly", async () => {
    const a = await runScenario(42, "sqlite", { verbose: true });
    const b = await runScenario(42, "sqlite", { verbose: true });
    expect(b.stats).toEqual(a.stats);
    expect(b.timeline).toEqual(a.timeline);
  });
});
