// The README's library example, kept here so the typecheck proves it compiles.
import { runAsLeader } from "leasehold";
import { SqliteStore } from "leasehold/stores/sqlite";

const store = new SqliteStore({ path: "./data/leasehold.db" });
const stop = new AbortController();
process.once("SIGTERM", () => stop.abort());

await runAsLeader(
  { store, name: "adapters/billing", leaseMs: 15_000, signal: stop.signal },
  async ({ term, signal }) => {
    // Only the leader gets here. Pass `term` as the fencing token to everything you write.
    while (!signal.aborted) {
      console.log(`leading with term ${term}`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  },
);
