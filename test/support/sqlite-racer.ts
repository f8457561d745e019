/**
 * A child process for the multi-process SQLite test. Modes:
 *   once <db> <name> <revision> <id> <startAt>: one CAS on <revision> at wall time <startAt>
 *   count <db> <name> <id> <n>: n read-CAS-retry increments of metadata.count
 * Prints one JSON line with the outcome.
 */

import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { LeaseConflictError } from "../../src/errors.js";

const [mode, path, name, ...rest] = process.argv.slice(2);
const store = new SqliteStore({ path: path!, busyTimeoutMs: 10_000 });

if (mode === "once") {
  const [revision, id, startAt] = rest;
  const current = (await store.get(name!))!;
  while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
  try {
    await store.put({ ...current.record, holder: id!, term: current.record.term + 1, writeId: `w-${id}` }, revision!);
    console.log(JSON.stringify({ id, won: true }));
  } catch (error) {
    console.log(JSON.stringify({ id, won: false, conflict: error instanceof LeaseConflictError }));
  }
} else if (mode === "count") {
  const [id, n] = rest;
  let conflicts = 0;
  for (let done = 0; done < Number(n); ) {
    const current = (await store.get(name!))!;
    const count = Number(current.record.metadata.count ?? "0") + 1;
    try {
      await store.put(
        { ...current.record, holder: id!, metadata: { count: String(count) }, writeId: `w-${id}-${done}` },
        current.revision,
      );
      done++;
    } catch (error) {
      if (!(error instanceof LeaseConflictError)) throw error;
      conflicts++;
    }
  }
  console.log(JSON.stringify({ id, conflicts }));
}
await store.close();
