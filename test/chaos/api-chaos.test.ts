/**
 * The chaos scenarios through the HTTP API (scenario.ts with `api`, api-world.ts): every candidate
 * an HttpStore whose requests cross the chaos network to the API's app, on a server with its own
 * skewed wall clock whose holding rules judge every write. A scenario here costs several times a
 * direct one (each request is routed, validated and digested), so `npm test` runs 16 seeds per
 * mode, alternating memory and SQLite; `npm run chaos -- --api` runs more.
 */
import { afterAll, describe, expect, it } from "vitest";
import { MODES, runScenario, type ScenarioStats } from "./scenario.js";
import { addResult, type ChaosTotals, emptyTotals } from "./summary.js";

const RUNS_PER_MODE = 16;
const FROM = Number(process.env.CHAOS_SEED_FROM ?? 1);

/**
 * Writes the API's holding rules refused (409), over every mode: a few a mode in 64 seeds, so a
 * mode's 16 alone may show none (default candidates, seeds 1-16, since looks follow renewals).
 */
let refusals = 0;
afterAll(() => expect(refusals, "the holding rules refused writes").toBeGreaterThan(0));

describe.each(MODES)("chaos through the HTTP API: %s candidates", (mode) => {
  it(`${RUNS_PER_MODE} seeded scenarios keep every safety property`, async () => {
    const totals: ChaosTotals = emptyTotals<ScenarioStats>();
    for (let seed = FROM; seed < FROM + RUNS_PER_MODE; seed++) {
      const backend = seed % 2 === 0 ? "sqlite" : "memory";
      const r = await runScenario(seed, backend, { mode, api: true });
      addResult(totals, r);
      if (r.violations.length > 0) {
        throw new Error(
          `chaos seed ${seed}, mode ${mode} on ${backend} through the API (${r.summary}) violated safety:\n  ${r.violations.slice(0, 5).join("\n  ")}\n` +
            `replay: npm run chaos -- --seed ${seed} --mode ${mode} --backend ${backend} --api`,
        );
      }
    }
    expect(totals.violations).toBe(0);
    for (const kind of ["pause", "crash", "graceful-stop", "reorder", "fail-after", "wall-skew", "clock-drift"]) {
      expect(totals.faults.get(kind) ?? 0, `fault kind ${kind}`).toBeGreaterThan(0);
    }
    expect(totals.elections).toBeGreaterThan(totals.scenarios * 2);
    expect(totals.staleWrites, "paused leaders woke and wrote").toBeGreaterThan(0);
    if (mode === "plain") return;
    expect(totals.registrations, "followers registered through the API").toBeGreaterThan(0);
    expect(totals.handovers, "graceful stops handed over through the API").toBeGreaterThan(0);
    expect(totals.sessionFences, "expired sessions fenced through the API").toBeGreaterThan(0);
    refusals += totals.apiRefusals;
  }, 300_000);
});

it("a bound seed through the API replays exactly", async () => {
  const a = await runScenario(3, "sqlite", { mode: "bound", api: true, verbose: true });
  const b = await runScenario(3, "sqlite", { mode: "bound", api: true, verbose: true });
  expect(b.stats).toEqual(a.stats);
  expect(b.timeline).toEqual(a.timeline);
}, 60_000);
