/**
 * The processes of the power-loss test (test/sqlite-power-loss.test.ts). Each prints one JSON line
 * per acknowledged write, as it learns of it, so the test judges from what the processes were
 * told, not from the database:
 *
 *   api-hold URL NAME HOLDER LEASE_MS   acquire, then renew as fast as answered, until the server is gone
 *   api-take URL NAME HOLDER LEASE_MS   acquire every 50 ms until leader, then exit
 *   elector DB NAME IDENTITY [normal]   an Elector on a SqliteStore of DB until killed; every put and
 *                                       get it makes is printed ("normal": the old synchronous=NORMAL)
 *
 * Lines: {"op":"acquire"|"renew","term","revision","leader"}, {"op":"gone","error"} (api-*);
 * {"op":"put","term","revision"}, {"op":"get","term","revision"}, {"op":"elected","term"} (elector).
 */

import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { Elector } from "../../src/leader/elector.js";
import type { CallOptions, LeaseRecord, Revision, Stored } from "../../src/lease.js";
import { StoreWrapper } from "../../src/testkit/store-wrapper.js";

const [mode, target, name, who, extra] = process.argv.slice(2) as [string, string, string, string, string?];
const say = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);

interface LeaseResult {
  leader: boolean;
  lease: { term: number; revision: string };
}

/** This process's instance: the API renews and re-acquires only for the instance that acquired. */
const instance = crypto.randomUUID();

async function call(verb: "acquire" | "renew", body: Record<string, unknown>): Promise<LeaseResult | undefined> {
  const response = await fetch(`${target}/v1/leases/${encodeURIComponent(name)}/${verb}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ holder: who, instance, ...body }),
  });
  const result = (await response.json()) as LeaseResult;
  if (response.status === 200 || response.status === 201) {
    say({ op: verb, term: result.lease.term, revision: Number(result.lease.revision), leader: result.leader });
    return result;
  }
  return undefined;
}

/** Prints every acknowledged put and every read of the store under the elector. */
class Logged extends StoreWrapper {
  override async get(lease: string, options?: CallOptions): Promise<Stored | null> {
    const stored = await super.get(lease, options);
    say({ op: "get", term: stored?.record.term ?? null, revision: stored ? Number(stored.revision) : null });
    return stored;
  }

  override async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const stored = await super.put(next, expected, options);
    say({ op: "put", term: stored.record.term, revision: Number(stored.revision) });
    return stored;
  }
}

if (mode === "api-hold" || mode === "api-take") {
  const leaseMs = Number(extra);
  try {
    if (mode === "api-take") {
      while (!(await call("acquire", { leaseMs }))?.leader) await new Promise((r) => setTimeout(r, 50));
    } else {
      const held = await call("acquire", { leaseMs });
      if (!held?.leader) throw new Error("not leader");
      for (;;) await call("renew", { term: held.lease.term });
    }
  } catch (error) {
    say({ op: "gone", error: String(error) });
  }
} else if (mode === "elector") {
  const baseline = extra === "normal" ? ({ synchronous: "NORMAL", inline: true } as const) : {};
  const store = new Logged(new SqliteStore({ path: target }, baseline));
  // Renewing its own record: every acknowledged write is the lease's, which the test reads back.
  const elector = new Elector({
    store,
    name,
    identity: who,
    leaseMs: 1000,
    renewMs: 100,
    retryMs: 100,
    session: false,
  });
  elector.on("elected", ({ term }) => say({ op: "elected", term }));
  elector.start();
} else {
  throw new Error(`unknown mode ${mode}`);
}
