// The README's sharding example, kept here so the typecheck proves it compiles.
import { bucketOf, runSharded } from "leasehold/sharding";
import { SqliteStore } from "leasehold/stores/sqlite";

// Your code: where events come from and where their results go.
declare function nextEvents(signal: AbortSignal): Promise<Array<{ key: string; body: string }>>;
declare function save(key: string, body: string, fence: { bucket: number; term: number }): Promise<void>;

const store = new SqliteStore({ path: "./data/leasehold.db" });
const stop = new AbortController();
process.once("SIGTERM", () => stop.abort()); // hand every bucket over, then return

await runSharded(
  { store, group: "adapters/billing", buckets: 16, leaseMs: 15_000, signal: stop.signal },
  async ({ bucket, buckets, term, signal, stillLeader }) => {
    // This replica owns `bucket` until `signal` aborts; `term` is the bucket's fencing token.
    while (!signal.aborted) {
      for (const event of await nextEvents(signal)) {
        if (bucketOf(event.key, buckets) !== bucket) continue; // another bucket's key
        if (!stillLeader()) return; // paused past its session: stop before any side effect
        await save(event.key, event.body, { bucket, term }); // the store rejects older terms
      }
    }
  },
);
