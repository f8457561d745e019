// The README's scheduled-job example (its five lines below the store), kept here so the typecheck
// proves it compiles.
import { schedule } from "leasehold/schedule";
import { SqliteStore } from "leasehold/stores/sqlite";

const store = new SqliteStore({ path: "./data/leasehold.db" });

schedule({ store, name: "jobs/nightly-billing", cron: "0 2 * * *", timezone: "Europe/Paris",
  lockAtMostFor: 30 * 60_000, // the run's signal aborts then; another replica may run the next fire
  fn: ({ fire, term, signal }) => bill(fire, { fencingToken: term, signal }),
});

/** Bills the day before `fire`; the billing database refuses writes with an older fencing token. */
async function bill(fire: Date, o: { fencingToken: number; signal: AbortSignal }): Promise<void> {
  if (o.signal.aborted) return;
  console.log(`billing the day before ${fire.toISOString()} under term ${o.fencingToken}`);
}
