/**
 * Many API replicas over one store (issue #24): two `npm start` processes, A and B, over one
 * DynamoDB table (dynalite in its own process) and over one SQLite file. Replica B serves N watch
 * streams, one per lease (N = 1, 100, 10,000; LEASEHOLD_WATCH_POLL_MS at its default, 1 s). For
 * each N we measure, on B:
 * - store requests per second (its own /metrics: get + get_many calls) and its CPU, over a window
 *   with the streams open and nothing changing;
 * - cross-replica handover: a leader (an Elector on the HTTP store) releases through A while its
 *   follower watches through B; time from the leader's stop to the follower leading. The
 *   follower's own poll is a minute away, so B's re-read is what tells it;
 * - same-replica handover (key-affinity routing: both through B): B's own push.
 * "before": the replica's store hides `getMany` (bench/support/replica-per-lease-reads.ts), so the
 * hub reads each watched lease with its own get, as every replica did before batched re-reads;
 * "after": the store's batch read, 100 leases a request. The watched leases of the background
 * streams are never written (a batch read costs the same for a missing key).
 */
import { setMaxListeners } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { HttpStore } from "../src/backends/http/store.js";
import { LeaseholdClient } from "../src/http/client.js";
import { Elector } from "../src/leader/elector.js";
import { createLeaseTable, dynamoClient } from "../test/support/dynamo-server.js";
import { type Replica, startReplica } from "../test/support/replicas.js";
import { machineLoad, QUICK, sleep, tempDir } from "./support/common.js";
import { startDynaliteProcess } from "./support/dynalite-process.js";
import { median, quantile, type Table } from "./table.js";

const LEASES = QUICK ? [1, 100, 1000] : [1, 100, 10_000];
const HANDOVERS = QUICK ? 4 : 12;
const WINDOW_MS = QUICK ? 4000 : 10_000;
const OPEN_AT_ONCE = 200;
const BASELINE = join(import.meta.dirname, "support", "replica-per-lease-reads.ts");
const ticks = 100; // USER_HZ of /proc/<pid>/stat on Linux

export async function run(): Promise<Table[]> {
  const loadBefore = machineLoad();
  const dir = tempDir("replicas");
  const dynalite = await startDynaliteProcess();
  const rows: Array<Array<string | number>> = [];
  try {
    for (const backend of ["dynamodb", "sqlite"] as const) {
      for (const mode of ["before", "after"] as const) {
        const store =
          backend === "dynamodb"
            ? `dynamodb://${await createLeaseTable(dynamoClient(dynalite.endpoint))}?region=us-east-1&endpoint=${encodeURIComponent(dynalite.endpoint)}`
            : `sqlite:${dir.path(`${mode}.db`)}`;
        const env = {
          LEASEHOLD_STORE: store,
          LEASEHOLD_WATCH_STREAMS: "20000",
          LEASEHOLD_WATCH_STREAMS_PER_TOKEN: "20000",
          LEASEHOLD_MAX_CONNECTIONS: "20000",
          LEASEHOLD_HEARTBEAT_MS: "60000",
        };
        const entry = mode === "before" ? BASELINE : undefined;
        const [a, b] = await Promise.all(["A", "B"].map((n) => startReplica(n, env, entry)));
        const background = new Streams(b!.url);
        try {
          for (const n of LEASES) {
            await background.grow(n);
            const load = await requestsPerSecond(b!);
            const cross = await handovers(a!, b!);
            const local = await handovers(b!, b!);
            rows.push([
              backend,
              mode === "before" ? "one get per lease (before)" : "getMany, 100 a request (after)",
              n,
              load.requests,
              load.cpu,
              median(cross),
              quantile(cross, 0.99),
              median(local),
              quantile(local, 0.99),
            ]);
            console.error(`replicas: ${backend} ${mode} ${n} leases: ${JSON.stringify(rows.at(-1))}`);
          }
        } finally {
          background.close();
          await Promise.all([a!.stop(), b!.stop()]);
        }
      }
    }
  } finally {
    await dynalite.stop();
    dir.remove();
  }
  return [
    {
      title: "Many replicas over one store: store requests per replica and handover, by watched leases",
      note: `Two \`npm start\` processes over one store (DynamoDB: dynalite in its own process; SQLite: one file), LEASEHOLD_WATCH_POLL_MS 1000. Replica B serves one watch stream per lease; requests/s and CPU are B's over ${WINDOW_MS / 1000} s with nothing changing; handover: ${HANDOVERS} runs each, from the leader's stop (release through A, or through B) to the follower (watching through B) leading, ms. Load: ${loadBefore} at the start, ${machineLoad()} at the end.`,
      columns: [
        "store",
        "replica re-reads",
        "watched leases",
        "store requests / s (replica B)",
        "replica B CPU %",
        "cross-replica handover median",
        "p99",
        "same replica (key affinity) median",
        "p99",
      ],
      rows,
    },
  ];
}

/** B's store calls per second (get + get_many, from its /metrics) and CPU, over WINDOW_MS. */
async function requestsPerSecond(replica: Replica): Promise<{ requests: number; cpu: number }> {
  await sleep(1500); // let the first full re-read round after the last streams opened pass
  const calls = async () => {
    const text = await (await fetch(`${replica.url}/metrics`)).text();
    let total = 0;
    for (const op of ["get", "get_many"]) {
      total += Number(
        new RegExp(`^leasehold_store_call_duration_seconds_count\\{op="${op}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0,
      );
    }
    return total;
  };
  const cpu = () => {
    const fields = readFileSync(`/proc/${replica.child.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return Number(fields[11]) + Number(fields[12]); // utime + stime, in ticks
  };
  const [c0, t0, at0] = [await calls(), cpu(), performance.now()];
  await sleep(WINDOW_MS);
  const [c1, t1, at1] = [await calls(), cpu(), performance.now()];
  const seconds = (at1 - at0) / 1000;
  // The two /metrics requests themselves read nothing from the store.
  return { requests: (c1 - c0) / seconds, cpu: ((t1 - t0) / ticks / seconds) * 100 };
}

let runs = 0;

/** Handover times (ms): a leader through `leaderVia` releases; its follower watches through `followerVia`. */
async function handovers(leaderVia: Replica, followerVia: Replica): Promise<number[]> {
  const out: number[] = [];
  const timing = { leaseMs: 120_000, renewMs: 60_000, retryMs: 60_000, jitter: 0 };
  for (let i = 0; i < HANDOVERS; i++) {
    const name = `handover/${process.pid}-${runs++}`;
    const leader = new Elector({
      ...timing,
      name,
      identity: "leader",
      store: new HttpStore({ baseUrl: leaderVia.url }),
    });
    const follower = new Elector({
      ...timing,
      name,
      identity: "follower",
      store: new HttpStore({ baseUrl: followerVia.url }),
    });
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
    // Its watch stream is open a request later; and the release should land anywhere in B's interval.
    await sleep(300 + Math.random() * 1000);
    const stoppedAt = performance.now();
    await leader.stop();
    await following;
    out.push(electedAt - stoppedAt);
    await follower.stop();
  }
  return out;
}

/** Watch streams on a replica, one per lease `bg/<i>`, each read and discarded. */
class Streams {
  private readonly stop = new AbortController();
  private open = 0;

  constructor(private readonly url: string) {
    // One signal ends every stream: one listener per stream on it is expected, not a leak.
    setMaxListeners(20_000, this.stop.signal);
  }

  /** Opens streams until `total` are open. */
  async grow(total: number): Promise<void> {
    while (this.open < total) {
      const batch = Math.min(OPEN_AT_ONCE, total - this.open);
      await Promise.all(Array.from({ length: batch }, (_, i) => this.watch(`bg/${this.open + i}`)));
      this.open += batch;
    }
  }

  close(): void {
    this.stop.abort();
  }

  private async watch(name: string): Promise<void> {
    const res = await fetch(`${this.url}${LeaseholdClient.leasePath(name)}/watch`, { signal: this.stop.signal });
    if (res.status !== 200 || !res.body) throw new Error(`watch ${name}: HTTP ${res.status}: ${await res.text()}`);
    const reader = res.body.getReader();
    void (async () => {
      for (;;) if ((await reader.read()).done) return;
    })().catch(() => undefined);
  }
}
