/**
 * Many API replicas over one store, as deployed behind a load balancer: three `npm start`
 * processes (test/support/replicas.ts) over one DynamoDB table (dynalite) and over one SQLite
 * file. Electors talk to replicas through the HTTP store. Shown:
 * - a follower watching through replica B takes over when the leader releases through replica A
 *   (B learns of the release by its batched re-read of watched leases, LEASEHOLD_WATCH_POLL_MS, on
 *   DynamoDB, and by the store's own push on SQLite, which needs no re-read; the follower's own
 *   poll is a minute away, so only the stream can have told it);
 * - a replica killed (SIGKILL) with streams open: its clients resume on another replica with
 *   Last-Event-ID, are not sent again what they saw, and get the next change.
 * On DynamoDB each replica re-reads with the store's batch read (get_many in its metrics).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpStore } from "../src/backends/http/store.js";
import { LeaseholdClient } from "../src/http/client.js";
import { Elector } from "../src/leader/elector.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";
import { failoverFetch, type Replica, startReplica } from "./support/replicas.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-replicas-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BACKENDS = {
  dynamodb: async () => {
    const client = dynamoClient(testEndpoint());
    const table = await createLeaseTable(client);
    client.destroy();
    return `dynamodb://${table}?region=us-east-1&endpoint=${encodeURIComponent(testEndpoint())}`;
  },
  sqlite: async () => `sqlite:${join(dir, "leases.db")}`,
};

/** Waits for `condition`, failing with `what` after `ms`. */
async function until(what: string, condition: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const elected = (elector: Elector) => new Promise<{ term: number }>((resolve) => elector.on("elected", resolve));
// Nothing but a watch stream can wake a follower within this test: its own poll is a minute away.
const timing = { leaseMs: 120_000, renewMs: 60_000, retryMs: 60_000, jitter: 0 };

describe.each(Object.keys(BACKENDS) as Array<keyof typeof BACKENDS>)(
  "three API server processes over one %s store",
  (backend) => {
    let a: Replica;
    let b: Replica;
    let c: Replica;
    beforeAll(async () => {
      const store = await BACKENDS[backend]();
      const started = await Promise.all(
        ["A", "B", "C"].map((n) => startReplica(n, { LEASEHOLD_STORE: store, LEASEHOLD_WATCH_POLL_MS: "200" })),
      );
      [a, b, c] = started as [Replica, Replica, Replica];
    }, 120_000);
    afterAll(async () => {
      await Promise.all([a, b, c].map((r) => r?.stop()));
    });

    it("a follower watching through replica B takes over when the leader releases through replica A", async () => {
      const name = uniqueName("replicas");
      const leader = new Elector({ ...timing, name, identity: "leader", store: new HttpStore({ baseUrl: a.url }) });
      const follower = new Elector({ ...timing, name, identity: "follower", store: new HttpStore({ baseUrl: b.url }) });
      const leading = elected(leader);
      leader.start();
      expect(await leading).toMatchObject({ term: 1 });
      const following = elected(follower);
      follower.start();
      await until("the follower to see the leader", () => follower.current.holder === "leader");
      // B follows the lease for the follower's stream with its batched re-read on DynamoDB, by
      // SQLite's push (no re-read) on SQLite; the stream opens once the follower has registered as
      // successor and waits, so on DynamoDB the release is made once B is re-reading.
      const batchReads = /leasehold_store_call_duration_seconds_count\{op="get_many"\} [1-9]/;
      const bMetrics = async () => (await fetch(`${b.url}/metrics`)).text();
      if (backend !== "sqlite") {
        let seen = false;
        const started = Date.now();
        while (!seen && Date.now() - started < 30_000) {
          seen = batchReads.test(await bMetrics());
          if (!seen) await new Promise((r) => setTimeout(r, 50));
        }
        expect(seen, "B re-reads the watched lease in batches").toBe(true);
      }
      await leader.stop();
      expect(await following).toMatchObject({ term: 2 });
      expect(follower.current).toMatchObject({ isLeader: true, holder: "follower", term: 2 });
      await follower.stop();
      if (backend === "sqlite") expect(await bMetrics()).not.toMatch(batchReads);
    });

    it("a replica killed with streams open: clients resume on another with Last-Event-ID, missing nothing and sent nothing twice", async () => {
      const name = uniqueName("crash");
      const served: string[] = [];
      // Clients of B, moving on to C when B is gone (as behind a load balancer).
      const viaB = failoverFetch(() => [b, c], served);
      // Electors renewing their own record: the stream's events are then exactly held, released,
      // taken (a session-bound follower's registration would add one, and a hand-over drop one).
      const plain = { ...timing, session: false };
      const leader = new Elector({ ...plain, name, identity: "leader", store: new HttpStore({ baseUrl: a.url }) });
      const follower = new Elector({
        ...plain,
        name,
        identity: "follower",
        store: new HttpStore({ baseUrl: "http://replicas.invalid", fetch: viaB }),
      });
      const leading = elected(leader);
      leader.start();
      await leading;
      const stop = new AbortController();
      const events: Array<{ holder: string | null; free: boolean; term: number | undefined }> = [];
      const watcher = new LeaseholdClient({ baseUrl: "http://replicas.invalid", fetch: viaB });
      const watching = (async () => {
        for await (const e of watcher.watch(name, stop.signal)) {
          events.push({ holder: e.lease?.holder ?? null, free: e.free, term: e.lease?.term });
        }
      })().catch((error: unknown) => {
        if (!stop.signal.aborted) throw error;
      });
      const following = elected(follower);
      follower.start();
      await until("the watcher's first event and the follower's view", () => {
        return events.length === 1 && follower.current.holder === "leader";
      });
      expect(served.every((r) => r === "B")).toBe(true);

      b.child.kill("SIGKILL");
      await until("replica B to exit", () => b.child.exitCode !== null || b.child.signalCode !== null);
      // The streams break; both clients reconnect, to C, before the leader lets go.
      await until("the clients to reconnect to C", () => served.filter((r) => r === "C").length >= 2);
      await leader.stop();
      expect(await following).toMatchObject({ term: 2 });
      await until("the watcher to see the release and the takeover", () => events.length >= 3);
      stop.abort();
      await watching;
      await follower.stop();
      expect(events).toEqual([
        { holder: "leader", free: false, term: 1 },
        { holder: null, free: true, term: 1 },
        { holder: "follower", free: false, term: 2 },
      ]);
    });
  },
);
