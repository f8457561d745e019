// The README's library example, kept here so the typecheck proves it compiles.
import { runAsLeader } from "leasehold";
import { SqliteStore } from "leasehold/stores/sqlite";

const store = new SqliteStore({ path: "./data/leasehold.db" });
const stop = new AbortController();
process.once("SIGTERM", () => stop.abort());

await runAsLeader(
  { store, name: "adapters/billing", leaseMs: 15_000, signal: stop.signal },
  async ({ term, signal, stillLeader }) => {
    // Only the leader gets here. `term` is the fencing token: send it with everything you write,
    // and have the downstream system refuse older terms (docs/fencing.md).
    while (!signal.aborted) {
      const batch = await nextBatch();
      // Checked against the clock right before the side effect: false if this process was paused
      // past its lease, even before any timer has run. (assertLeader() throws instead.)
      if (!stillLeader()) break;
      await publish(batch, { fencingToken: term });
    }
  },
);

async function nextBatch(): Promise<string[]> {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return ["event"];
}

async function publish(batch: string[], options: { fencingToken: number }): Promise<void> {
  console.log(`publishing ${batch.length} with term ${options.fencingToken}`);
}
