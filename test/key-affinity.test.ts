/**
 * Key-affinity routing with the example nginx configuration (examples/key-affinity/nginx.conf,
 * Debian's nginx from test/support/nginx.ts) in front of three API instances over one DynamoDB
 * table (dynalite). Instances A and B re-read watched leases only once an hour, C every 200 ms,
 * so what reaches a stream on A or B within the test can only be that instance's own push:
 * - every request about one lease (acquire, get, watch, release) lands on one instance, chosen
 *   by the lease name; different leases spread over the instances;
 * - a release through the balancer reaches a follower watching through the balancer at once (push
 *   on the instance that wrote it), while a watch sent to another instance (misrouted) still gets
 *   it by that instance's re-read;
 * - when an instance goes away its leases move to the next one on the ring, and requests work.
 * The instances run in this process (each its own app, hub and store client: nothing is shared
 * but the table); real processes over one store are test/replicas.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoDbStore } from "../src/backends/dynamodb/store.js";
import { HttpStore } from "../src/backends/http/store.js";
import { LeaseholdClient } from "../src/http/client.js";
import { Elector } from "../src/leader/elector.js";
import { type RunningServer, serve } from "../src/runtime/node.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";
import { type RunningNginx, startNginx } from "./support/nginx.js";

const HOUR = 3_600_000;
const client = dynamoClient(testEndpoint());
const instances: Record<"A" | "B" | "C", RunningServer> = {} as never;
const stores: DynamoDbStore[] = [];
let nginx: RunningNginx;
/** host:port of each instance, as nginx names it in X-Leasehold-Replica. */
const nameOf = new Map<string, "A" | "B" | "C">();

beforeAll(async () => {
  const table = await createLeaseTable(client);
  for (const [name, pollMs] of [
    ["A", HOUR],
    ["B", HOUR],
    ["C", 200],
  ] as const) {
    const store = new DynamoDbStore({ client, table });
    stores.push(store);
    instances[name] = await serve({ store, port: 0, watchPollMs: pollMs });
    nameOf.set(`127.0.0.1:${instances[name].port}`, name);
  }
  nginx = await startNginx(Object.values(instances).map((s) => `127.0.0.1:${s.port}`));
}, 120_000);

afterAll(async () => {
  await nginx?.stop();
  await Promise.all(Object.values(instances).map((s) => s.close().catch(() => undefined)));
  client.destroy();
});

/** Which instance nginx sent a request to. */
async function servedBy(method: string, path: string, body?: unknown): Promise<"A" | "B" | "C" | undefined> {
  const res = await fetch(`${nginx.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  await res.body?.cancel();
  return nameOf.get(res.headers.get("x-leasehold-replica") ?? "");
}

const leasePath = (name: string) => LeaseholdClient.leasePath(name);
const timing = { leaseMs: 120_000, renewMs: 60_000, retryMs: 60_000, jitter: 0 };

describe("key-affinity routing (nginx, consistent hash of the lease name)", () => {
  it("sends every request about one lease to one instance, and different leases to different instances", async () => {
    const owners = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const name = uniqueName(`affinity-${i}`);
      const instance = crypto.randomUUID();
      const seen = [
        await servedBy("POST", `${leasePath(name)}/acquire`, { holder: "h", leaseMs: 60_000, instance }),
        await servedBy("GET", leasePath(name)),
        await servedBy("HEAD", `${leasePath(name)}/watch`),
        await servedBy("POST", `${leasePath(name)}/release`, { holder: "h", term: 1, instance }),
      ];
      expect(
        seen.every((s) => s !== undefined && s === seen[0]),
        `${name}: ${seen.join(", ")}`,
      ).toBe(true);
      owners.add(seen[0]!);
    }
    expect(owners.size).toBeGreaterThan(1);
  });

  it("a release through the balancer reaches a follower watching through it at once (the instance's own push); a misrouted watch gets it by polling", async () => {
    // A lease kept by A or B: they re-read once an hour, so only their own push can be fast.
    let name = "";
    let owner: string | undefined;
    for (let i = 0; owner === undefined || owner === "C"; i++) {
      name = uniqueName(`push-${i}`);
      owner = await servedBy("GET", leasePath(name));
    }
    const viaBalancer = () => new HttpStore({ baseUrl: nginx.url });
    const leader = new Elector({ ...timing, name, identity: "leader", store: viaBalancer() });
    const follower = new Elector({ ...timing, name, identity: "follower", store: viaBalancer() });
    const misrouted: Array<string | null> = [];
    const stop = new AbortController();
    const watching = (async () => {
      for await (const e of new LeaseholdClient({ baseUrl: instances.C.url }).watch(name, stop.signal)) {
        misrouted.push(e.lease?.holder ?? null);
      }
    })().catch(() => undefined);

    const leading = new Promise((resolve) => leader.on("elected", resolve));
    leader.start();
    await leading;
    const following = new Promise<{ term: number }>((resolve) => follower.on("elected", resolve));
    follower.start();
    while (follower.current.holder !== "leader" || !misrouted.includes("leader")) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await leader.stop();
    expect(await following).toMatchObject({ term: 2 });
    while (!misrouted.includes("follower")) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    await watching;
    await follower.stop();
    // C, which serves none of this lease's requests, followed it by its 200 ms re-read (which may
    // see the release and the takeover as one change: the free states between are null; and the
    // follower's registration as successor rewrites the record with the same holder).
    const holders = misrouted.filter((holder) => holder !== null);
    expect(holders.filter((h, i) => i === 0 || holders[i - 1] !== h)).toEqual(["leader", "follower"]);
  });

  it("an instance that goes away: its leases move to the next instance on the ring, and requests keep working", async () => {
    let name = uniqueName("moves-0");
    for (let i = 1; (await servedBy("GET", leasePath(name))) !== "A"; i++) name = uniqueName(`moves-${i}`);
    await instances.A.close();
    const instance = crypto.randomUUID();
    const res = await fetch(`${nginx.url}${leasePath(name)}/acquire`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ holder: "survivor", leaseMs: 60_000, instance }),
    });
    expect(res.status).toBe(200);
    expect(["B", "C"]).toContain(nameOf.get(res.headers.get("x-leasehold-replica")?.split(", ").at(-1) ?? ""));
    // Every later request for that lease goes to the same new instance.
    const next = await servedBy("GET", leasePath(name));
    expect(next).toBe(nameOf.get(res.headers.get("x-leasehold-replica")?.split(", ").at(-1) ?? ""));
  });
});
