/**
 * PostgreSQL (issue #34): a real PostgreSQL 15 started for the run (test/support/postgres-server.ts,
 * fsync and synchronous_commit on, on this machine's disk), beside SQLite (a file, synchronous FULL)
 * and DynamoDB (dynalite in memory).
 * - Latency, one call at a time: a read, a compare-and-swap (raw driver statement, the store's put
 *   with and without its NOTIFY), a conflict.
 * - Renewals per second per connection: W writers, each renewing its own lease as fast as it is
 *   answered, through a pool of P connections, NOTIFY on and off. PostgreSQL commits every
 *   transaction that NOTIFYs one at a time (a lock held through the commit's WAL flush), so group
 *   commit cannot help those: the table shows what that costs.
 * - The pool size a number of leases needs: L Electors in one process (renewMs 2 s) on one store
 *   with a pool of P, for 12 s: renewal latency and terms lost; and the same leases bound to one
 *   process session (one write per renewal whatever L).
 * - Handover through NOTIFY against polling: an Elector pair on the store (push on: the follower's
 *   stream; push off: its poll, pollMs 1 s), and three `npm start` replicas over one database with
 *   the follower watching through B and the leader releasing through A (push: B's LISTEN; off:
 *   B's re-read every LEASEHOLD_WATCH_POLL_MS = 1 s).
 */
import pg from "pg";
import { DynamoDbStore } from "../src/backends/dynamodb/store.js";
import { HttpStore } from "../src/backends/http/store.js";
import { PostgresStore } from "../src/backends/postgres/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { openSession } from "../src/bound/session.js";
import { Elector } from "../src/leader/elector.js";
import type { CallOptions, LeaseRecord, LeaseStore, Stored } from "../src/lease.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { createLeaseTable, dynamoClient, startDynalite } from "../test/support/dynamo-server.js";
import { type RunningPostgres, startPostgres } from "../test/support/postgres-server.js";
import { type Replica, startReplica } from "../test/support/replicas.js";
import { benchRecord, machineLoad, QUICK, sleep, tempDir } from "./support/common.js";
import { median, quantile, type Table, timeCalls } from "./table.js";

const CALLS = QUICK ? 100 : 400;
const THROUGHPUT_MS = QUICK ? 2000 : 5000;
const POOLS = QUICK ? [1, 4] : [1, 2, 4, 8, 16];
const FLEET = QUICK
  ? [{ leases: 100, pools: [2, 10] }]
  : [100, 500, 1000].map((leases) => ({ leases, pools: [1, 4, 10] }));
const FLEET_MS = QUICK ? 6000 : 12_000;
const HANDOVERS = QUICK ? 4 : 12;

export async function run(): Promise<Table[]> {
  const loadBefore = machineLoad();
  const server = await startPostgres();
  try {
    const latency = await latencyTable(server);
    const throughput = await throughputTable(server);
    const fleet = await fleetTable(server);
    const handover = await handoverTable(server);
    const load = `Load: ${loadBefore} at the start, ${machineLoad()} at the end.`;
    for (const t of [latency, throughput, fleet, handover]) t.note = `${t.note} ${load}`;
    return [latency, throughput, fleet, handover];
  } finally {
    await server.stop();
  }
}

let leases = 0;
const fresh = (base: string) => `bench/${base}-${process.pid}-${leases++}`;

/** Times put (renewal), get and a stale put (conflict) on `store`, one call at a time. */
async function storeRows(label: string, store: LeaseStore): Promise<Array<Array<string | number>>> {
  const name = fresh("latency");
  let held: Stored = await store.put(benchRecord(name), null);
  const put = await timeCalls(CALLS, async (i) => {
    held = await store.put(benchRecord(name, i), held.revision);
  });
  const get = await timeCalls(CALLS, () => store.get(name));
  const stale = held.revision;
  held = await store.put(benchRecord(name, -1), held.revision);
  const conflict = await timeCalls(CALLS, () => store.put(benchRecord(name), stale).catch(() => undefined));
  return [
    [label, "put (a renewal's compare-and-swap)", CALLS, median(put), quantile(put, 0.99)],
    [label, "get", CALLS, median(get), quantile(get, 0.99)],
    [label, "put conflict (with the current record)", CALLS, median(conflict), quantile(conflict, 0.99)],
  ];
}

async function latencyTable(server: RunningPostgres): Promise<Table> {
  const rows: Array<Array<string | number>> = [];
  // The raw statement the store's put sends, through node-postgres, without the store.
  const client = new pg.Client(server.url);
  await client.connect();
  const push = new PostgresStore({ connectionString: server.url, poolSize: 2 });
  const quiet = new PostgresStore({ connectionString: server.url, poolSize: 2, push: false });
  try {
    const name = fresh("raw");
    await push.put(benchRecord(name), null);
    let rev = 1;
    const raw = await timeCalls(CALLS, async (i) => {
      const json = JSON.stringify(benchRecord(name, i));
      const r = await client.query(
        `UPDATE ${push.table} SET rev = rev + 1, record = $2::json WHERE name = $1 AND rev = $3 RETURNING rev::text`,
        [name, json, rev],
      );
      rev = Number(r.rows[0].rev);
    });
    rows.push(["postgres", "raw UPDATE ... WHERE rev = $3 (node-postgres)", CALLS, median(raw), quantile(raw, 0.99)]);
    rows.push(...(await storeRows("postgres (push on: NOTIFY)", push)));
    rows.push(...(await storeRows("postgres (push off)", quiet)).slice(0, 1));
  } finally {
    await client.end();
    await push.close();
    await quiet.close();
  }
  const dir = tempDir("pg-bench");
  const sqlite = new SqliteStore({ path: dir.path("leases.db") });
  try {
    rows.push(...(await storeRows("sqlite (synchronous FULL)", sqlite)));
  } finally {
    await sqlite.close();
    dir.remove();
  }
  const dynalite = await startDynalite();
  const dynamo = dynamoClient(dynalite.endpoint);
  try {
    rows.push(
      ...(await storeRows(
        "dynamodb (dynalite, memory)",
        new DynamoDbStore({ client: dynamo, table: await createLeaseTable(dynamo) }),
      )),
    );
  } finally {
    dynamo.destroy();
    await dynalite.stop();
  }
  return {
    title: "PostgreSQL beside SQLite and DynamoDB: one call at a time",
    note: `Loopback, one lease per row, ${CALLS} calls each after 20 warm-up calls; ms. PostgreSQL 15 with fsync and synchronous_commit on (every commit waits for its WAL flush on this machine's disk); SQLite synchronous FULL (its writer thread's fsync); dynalite keeps items in memory (real DynamoDB answers in a few ms over the network, durably).`,
    columns: ["store", "operation", "n", "median ms", "p99 ms"],
    rows,
  };
}

/** `writers` loops renewing their own lease through one store for `ms`: writes, p99 latency. */
async function hammer(store: LeaseStore, writers: number, ms: number): Promise<{ writes: number; p99: number }> {
  const latencies: number[] = [];
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      const name = fresh("hammer");
      let held = await store.put(benchRecord(name), null);
      while (performance.now() < end) {
        const t0 = performance.now();
        held = await store.put(benchRecord(name, latencies.length), held.revision);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { writes: latencies.length, p99: quantile(latencies, 0.99) };
}

async function throughputTable(server: RunningPostgres): Promise<Table> {
  const rows: Array<Array<string | number>> = [];
  for (const push of [true, false]) {
    for (const pool of POOLS) {
      const store = new PostgresStore({ connectionString: server.url, poolSize: pool, push });
      try {
        await store.get("warm-up");
        const writers = pool * 2;
        const { writes, p99 } = await hammer(store, writers, THROUGHPUT_MS);
        const perSecond = writes / (THROUGHPUT_MS / 1000);
        rows.push([push ? "on (NOTIFY each write)" : "off", pool, writers, perSecond, perSecond / pool, p99]);
        console.error(`postgres throughput: push ${push} pool ${pool}: ${perSecond.toFixed(0)}/s`);
      } finally {
        await store.close();
      }
    }
  }
  return {
    title: "PostgreSQL: renewals per second per connection",
    note: `One process, one store with a pool of P connections; 2P writers each renew a lease of its own (one compare-and-swap, answered before the next) for ${THROUGHPUT_MS / 1000} s. Every write is durable (fsync, synchronous_commit on). With push on, PostgreSQL commits the NOTIFYing transactions one at a time (a lock held through each commit's WAL flush): concurrency does not add throughput, a faster disk does.`,
    columns: ["push", "pool (connections)", "writers", "renewals / s", "renewals / s per connection", "p99 ms"],
    rows,
  };
}

/** Times every write a store is asked for (the renewals, in steady state). */
class TimedWrites extends StoreWrapper {
  readonly latencies: number[] = [];
  counting = false;

  override async put(next: LeaseRecord, expected: string | null, options?: CallOptions): Promise<Stored> {
    const t0 = performance.now();
    const stored = await super.put(next, expected, options);
    if (this.counting) this.latencies.push(performance.now() - t0);
    return stored;
  }
}

/** L leases renewing every 2 s in one process on a pool of P, each its own Elector or all bound to one session. */
async function fleet(server: RunningPostgres, leases: number, pool: number, bound: boolean) {
  const inner = new PostgresStore({ connectionString: server.url, poolSize: pool });
  const store = new TimedWrites(inner);
  let lost = 0;
  const prefix = fresh(`fleet-${leases}-${pool}`);
  const timing = { leaseMs: 6000, renewMs: 2000 };
  const session = bound ? openSession({ store, name: `${prefix}/_sessions/bench`, ...timing }) : undefined;
  const electors = Array.from({ length: leases }, (_, i) => {
    const name = `${prefix}/${i}`;
    return session ? session.elector({ name }) : new Elector({ store, identity: "fleet", name, ...timing });
  });
  const elected = electors.map((e) => new Promise<void>((resolve) => e.on("elected", () => resolve())));
  for (const e of electors) e.on("deposed", () => lost++);
  for (const e of electors) e.start();
  await Promise.all(elected);
  const lostBefore = lost;
  store.counting = true;
  await sleep(FLEET_MS);
  store.counting = false;
  const result = {
    lost: lost - lostBefore,
    writesPerSecond: store.latencies.length / (FLEET_MS / 1000),
    p99: quantile(store.latencies, 0.99),
  };
  if (session) await session.close({ release: false });
  else await Promise.all(electors.map((e) => e.stop({ release: false })));
  await inner.close();
  return result;
}

async function fleetTable(server: RunningPostgres): Promise<Table> {
  const rows: Array<Array<string | number>> = [];
  for (const { leases, pools } of FLEET) {
    for (const pool of pools) {
      const r = await fleet(server, leases, pool, false);
      rows.push([leases, "one Elector per lease", pool, leases / 2, r.writesPerSecond, r.p99, r.lost]);
      console.error(`postgres fleet: ${leases} leases pool ${pool}: ${JSON.stringify(r)}`);
    }
    const r = await fleet(server, leases, 2, true);
    rows.push([leases, "bound to one process session", 2, 0.5, r.writesPerSecond, r.p99, r.lost]);
  }
  return {
    title: "PostgreSQL: the pool a number of leases needs",
    note: `L leases led by one process on one store (push on), leaseMs 6 s, renewMs 2 s, for ${FLEET_MS / 1000} s after all were elected: one Elector per lease (L / 2 renewals a second), or every lease bound to one process session (one write per renewal, whatever L). Latency: each renewal's store.put, ms; lost: terms that ended in the window.`,
    columns: ["leases", "mode", "pool", "writes / s needed", "writes / s done", "renewal p99 ms", "terms lost"],
    rows,
  };
}

/** Time from the leader's stop (release) to the follower leading, ms, `HANDOVERS` times. */
async function handovers(
  leaderStore: () => LeaseStore,
  followerStore: () => LeaseStore,
  pollMs?: number,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < HANDOVERS; i++) {
    const name = fresh("handover");
    const timing = { leaseMs: 15_000, jitter: 0, ...(pollMs === undefined ? { pollMs: 60_000 } : { pollMs }) };
    const leader = new Elector({ ...timing, name, identity: "leader", store: leaderStore() });
    const follower = new Elector({ ...timing, name, identity: "follower", store: followerStore() });
    const leading = new Promise((resolve) => leader.on("elected", resolve));
    leader.start();
    await leading;
    let electedAt = 0;
    const following = new Promise<void>((resolve) =>
      follower.on("elected", () => {
        electedAt = performance.now();
        resolve();
      }),
    );
    follower.start();
    while (follower.current.holder !== "leader") await sleep(10);
    await sleep(300 + Math.random() * 1000); // its stream is open; the release lands anywhere in a poll cycle
    const stoppedAt = performance.now();
    await leader.stop();
    await following;
    out.push(electedAt - stoppedAt);
    await follower.stop();
  }
  return out;
}

async function handoverTable(server: RunningPostgres): Promise<Table> {
  const rows: Array<Array<string | number>> = [];
  for (const push of [true, false]) {
    const store = new PostgresStore({ connectionString: server.url, poolSize: 4, push });
    try {
      const times = await handovers(
        () => store,
        () => store,
        push ? undefined : 1000,
      );
      rows.push([
        "Elector pair on the store",
        push ? "NOTIFY → the follower's stream" : "the follower's poll (pollMs 1000)",
        HANDOVERS,
        median(times),
        quantile(times, 0.99),
      ]);
    } finally {
      await store.close();
    }
  }
  for (const push of [true, false]) {
    const env = {
      LEASEHOLD_STORE: `${server.url}?table=replicas${push ? "" : "&push=off"}`,
      LEASEHOLD_WATCH_POLL_MS: "1000",
    };
    const [a, b, c] = (await Promise.all(["A", "B", "C"].map((n) => startReplica(n, env)))) as Replica[];
    try {
      // The follower's own poll is a minute away: B's stream is what tells it.
      const times = await handovers(
        () => new HttpStore({ baseUrl: a!.url }),
        () => new HttpStore({ baseUrl: b!.url }),
      );
      rows.push([
        "3 API replicas, leader via A, follower via B",
        push ? "NOTIFY → replica B's LISTEN → SSE" : "replica B's re-read (LEASEHOLD_WATCH_POLL_MS 1000) → SSE",
        HANDOVERS,
        median(times),
        quantile(times, 0.99),
      ]);
    } finally {
      await Promise.all([a, b, c].map((r) => r?.stop()));
    }
  }
  return {
    title: "PostgreSQL: handover through NOTIFY against polling",
    note: `From the leader's stop({ release: true }) to the follower's elected event, ${HANDOVERS} runs each, the release at a random moment 0.3-1.3 s after the follower saw the leader; ms. Replicas: three \`npm start\` processes over one database.`,
    columns: ["setup", "how the follower learns", "runs", "median ms", "p99 ms"],
    rows,
  };
}
