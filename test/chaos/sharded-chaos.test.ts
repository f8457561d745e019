/**
 * The seeded sharded chaos budget of `npm test` (sharded-scenario.ts): members joining, leaving,
 * crashing, paused past their session and cut off from the store, bucket counts changed, over the
 * same faulty network, skewed wall clocks and drifting monotonic clocks as the single-lease budget.
 * Judged per bucket and across counts for safety, and at the end for liveness and balance.
 * A failure names its seed and the command that replays it with a timeline.
 */
import { describe, expect, it } from "vitest";
import type { Backend } from "./scenario.js";
import { runShardedScenario, type ShardedScenarioStats } from "./sharded-scenario.js";
import { addResult, emptyTotals, type ShardedTotals } from "./summary.js";

const RUNS: Record<Backend, number> = { memory: 150, sqlite: 50 };
const FROM = Number(process.env.CHAOS_SEED_FROM ?? 1);

async function budget(backend: Backend): Promise<ShardedTotals> {
  const totals = emptyTotals<ShardedScenarioStats>();
  for (let seed = FROM; seed < FROM + RUNS[backend]; seed++) {
    const r = await runShardedScenario(seed, backend);
    addResult(totals, r);
    if (r.violations.length > 0) {
      throw new Error(
        `sharded chaos seed ${seed} on ${backend} (${r.summary}) failed:\n  ${r.violations.slice(0, 5).join("\n  ")}\n` +
          `replay: npm run chaos -- --sharded --seed ${seed} --backend ${backend}`,
      );
    }
  }
  return totals;
}

describe.each(["memory", "sqlite"] as const)("sharded chaos on the manual clock: %s", (backend) => {
  it(`${RUNS[backend]} seeded scenarios keep every bucket safe, and end owned and balanced`, async () => {
    const totals = await budget(backend);
    expect(totals.violations).toBe(0);
    // The budget is only worth something if it exercised what it claims to.
    for (const kind of [
      "join",
      "graceful-leave",
      "crash",
      "pause",
      "partition",
      "restart",
      "clock-drift",
      "wall-skew",
    ]) {
      expect(totals.faults.get(kind) ?? 0, `fault kind ${kind}`).toBeGreaterThan(0);
    }
    if (backend === "memory") {
      for (const kind of ["reshard", "reorder", "fail-after", "lost-response", "tail-latency"]) {
        expect(totals.faults.get(kind) ?? 0, `fault kind ${kind}`).toBeGreaterThan(0);
      }
    }
    expect(totals.handoffs, "buckets moved by request").toBeGreaterThan(0);
    expect(totals.takeovers, "buckets taken after a fence").toBeGreaterThan(0);
    expect(totals.fencedAccepted).toBeGreaterThan(totals.scenarios);
    expect(totals.unownedQuietMs).toBe(0);
  }, 180_000);
});

describe("the sharded checker is not vacuous", () => {
  it("monotonic clocks drifting 3x past the bound let two members be inside one bucket's window, and it says so", async () => {
    const found: string[] = [];
    for (let seed = 1; seed <= 80 && found.length === 0; seed++) {
      const r = await runShardedScenario(seed, "memory", { driftFactor: 3 });
      found.push(
        ...r.violations.filter((v) => /^bucket \d+: two candidates inside their safe windows at once/.test(v)),
      );
    }
    expect(found.length).toBeGreaterThan(0);
  }, 120_000);

  it("taking an expired member's buckets without fencing its session first is caught", async () => {
    const found: string[] = [];
    // Rare since renewals retry within their window: only a member paused with a renewal on its way,
    // applied after a peer took its buckets unfenced, works on. Of seeds 1-500 the first that makes
    // one is 366 (seeds replay exactly); CHAOS_UNFENCED_SEEDS=1-500 scans them all.
    const [from, to] = (process.env.CHAOS_UNFENCED_SEEDS ?? "366-366").split("-").map(Number) as [number, number];
    for (let seed = from; seed <= (to ?? from) && found.length === 0; seed++) {
      const r = await runShardedScenario(seed, "memory", { unfenced: true });
      found.push(...r.violations.filter((v) => /^bucket \d+: (two candidates inside|resource rejected term)/.test(v)));
    }
    expect(found.length).toBeGreaterThan(0);
  }, 120_000);

  it("a seed replays exactly", async () => {
    const a = await runShardedScenario(7, "sqlite", { verbose: true });
    const b = await runShardedScenario(7, "sqlite", { verbose: true });
    expect(b.stats).toEqual(a.stats);
    expect(b.timeline).toEqual(a.timeline);
  });
});
