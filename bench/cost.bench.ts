/**
 * Cost per renewal: store operations by role, counted by a wrapper around each candidate's store,
 * for one lease with a leader and two followers, per backend, ours against the client-go-style
 * polling elector; then what that lease costs per month in requests at providers' list prices.
 * Settings are the defaults a user would run: leaseMs 15 s, renewMs 5 s, retryMs 2 s, in real time.
 * Every (backend, elector) pair gets its own server and lease, and all run at once.
 */
import { Elector } from "../src/leader/elector.js";
import { BACKENDS, type Backend, type BackendName, openBackend } from "./support/backends.js";
import { QUICK, sleep, within } from "./support/common.js";
import { CountingStore, emptyCounts, type RoleCounts } from "./support/counting-store.js";
import { PollingElector } from "./support/polling-elector.js";
import { PRICES, PRICES_AS_OF, type RequestPrices, SECONDS_PER_MONTH } from "./support/prices.js";
import type { Table } from "./table.js";

const LEASE_MS = 15_000;
const RENEW_MS = 5_000;
const RETRY_MS = 2_000;
const CANDIDATES = 3;
/** Measuring window, in our renewal periods. */
const PERIODS = QUICK ? 2 : 8;
const WINDOW_MS = PERIODS * RENEW_MS;

type Algorithm = "ours" | "polling";

interface Measured {
  backend: BackendName;
  algorithm: Algorithm;
  windowMs: number;
  renewals: number;
  leader: RoleCounts;
  /** Summed over the followers. */
  followers: RoleCounts;
  followerCount: number;
  behindApiReads: number | undefined;
}

export async function run(): Promise<Table[]> {
  const jobs = BACKENDS.flatMap((backend) => (["ours", "polling"] as const).map((a) => measure(backend, a)));
  const results = await Promise.all(jobs);
  return [countsTable(results), costTable(results)];
}

async function measure(backendName: BackendName, algorithm: Algorithm): Promise<Measured> {
  const backend = await openBackend(backendName);
  try {
    return algorithm === "ours" ? await measureOurs(backend) : await measurePolling(backend);
  } finally {
    await backend.close();
  }
}

async function measureOurs(backend: Backend): Promise<Measured> {
  const electors: Elector[] = [];
  const wrappers: CountingStore[] = [];
  for (let i = 0; i < CANDIDATES; i++) {
    const wrapper = new CountingStore(backend.store(), () => (electors[i]?.current.isLeader ? "leader" : "follower"));
    wrappers.push(wrapper);
    electors.push(
      new Elector({
        store: wrapper,
        name: "cost-ours",
        identity: `c${i}`,
        leaseMs: LEASE_MS,
        renewMs: RENEW_MS,
        retryMs: RETRY_MS,
      }),
    );
  }
  let renewals = 0;
  let counting = false;
  for (const e of electors) {
    e.on("renewed", () => {
      if (counting) renewals++;
    });
  }
  const first = electors[0]!;
  const elected = new Promise<void>((resolve) => first.on("elected", () => resolve()));
  first.start();
  await within(elected, LEASE_MS);
  for (const e of electors.slice(1)) e.start();
  return countSteadyState(
    backend,
    wrappers,
    () => renewals,
    (on) => {
      counting = on;
    },
    () => Promise.all(electors.map((e) => e.stop({ release: true }))),
    "ours",
  );
}

async function measurePolling(backend: Backend): Promise<Measured> {
  const electors: PollingElector[] = [];
  const wrappers: CountingStore[] = [];
  for (let i = 0; i < CANDIDATES; i++) {
    const wrapper = new CountingStore(backend.store(), () => (electors[i]?.isLeader ? "leader" : "follower"));
    wrappers.push(wrapper);
    electors.push(
      new PollingElector({
        store: wrapper,
        name: "cost-polling",
        identity: `c${i}`,
        leaseMs: LEASE_MS,
        retryMs: RETRY_MS,
        renewDeadlineMs: (LEASE_MS * 2) / 3,
      }),
    );
  }
  const first = electors[0]!;
  const elected = new Promise<void>((resolve) => {
    first.events.elected = () => resolve();
  });
  first.start();
  await within(elected, LEASE_MS);
  for (const e of electors.slice(1)) e.start();
  // client-go's leader renews with one write per retry period: its writes are its renewals.
  return countSteadyState(
    backend,
    wrappers,
    () => sum(wrappers.map((w) => w.counts.leader)).put,
    () => undefined,
    () => Promise.all(electors.map((e) => e.stop({ release: true }))),
    "polling",
  );
}

/** Settles, counts for WINDOW_MS, then stops the candidates. */
async function countSteadyState(
  backend: Backend,
  wrappers: CountingStore[],
  renewals: () => number,
  setCounting: (on: boolean) => void,
  stop: () => Promise<unknown>,
  algorithm: Algorithm,
): Promise<Measured> {
  // Followers read at start (and open their watch); count only the steady state after that.
  await sleep(1500);
  for (const w of wrappers) w.reset();
  backend.behindApi?.reset();
  setCounting(true);
  await sleep(WINDOW_MS);
  setCounting(false);
  for (const w of wrappers) w.freeze();
  backend.behindApi?.freeze();
  const result: Measured = {
    backend: backend.name,
    algorithm,
    windowMs: WINDOW_MS,
    renewals: renewals(),
    leader: sum(wrappers.map((w) => w.counts.leader)),
    followers: sum(wrappers.map((w) => w.counts.follower)),
    followerCount: CANDIDATES - 1,
    behindApiReads: backend.behindApi?.counts.follower.get,
  };
  await stop();
  return result;
}

function sum(counts: RoleCounts[]): RoleCounts {
  const total = emptyCounts();
  for (const c of counts) {
    total.get += c.get;
    total.put += c.put;
    total.watch += c.watch;
  }
  return total;
}

const perMinute = (n: number, windowMs: number) => (n * 60_000) / windowMs;
const label = (a: Algorithm) => (a === "ours" ? "leasehold Elector" : "client-go-style polling");

function countsTable(results: Measured[]): Table {
  return {
    title: "Store operations per renewal and per follower poll",
    note:
      `One lease, 1 leader + ${CANDIDATES - 1} followers, leaseMs ${LEASE_MS}, renewMs ${RENEW_MS} (ours), retryMs ${RETRY_MS}; ` +
      `${WINDOW_MS / 1000} s of steady state counted by a wrapper around each candidate's store, by the caller's role at call ` +
      `time. Target for ours: 1 write and 0 reads per renewal. Polling (client-go) renews every retryMs. Follower rates are ` +
      `per follower. "behind the API": the HTTP API's own reads of its SQLite store in the same window (it re-reads a ` +
      `watched lease on a store that cannot push every watchPollMs = 1 s, plus the followers' reads it forwards).`,
    columns: [
      "backend",
      "elector",
      "renewals",
      "writes / renewal",
      "reads / renewal",
      "leader writes / min",
      "reads / min per follower",
      "writes / min per follower",
      "behind the API reads / min",
    ],
    rows: results.map((r) => [
      r.backend,
      label(r.algorithm),
      r.renewals,
      r.renewals === 0 ? "-" : r.leader.put / r.renewals,
      r.renewals === 0 ? "-" : r.leader.get / r.renewals,
      perMinute(r.leader.put, r.windowMs),
      perMinute(r.followers.get / r.followerCount, r.windowMs),
      perMinute(r.followers.put / r.followerCount, r.windowMs),
      r.behindApiReads === undefined ? "-" : perMinute(r.behindApiReads, r.windowMs),
    ]),
  };
}

/** Which measured backend stands for each provider's request pattern. */
const COSTED: Array<{ prices: RequestPrices; from: BackendName; why: string }> = [
  { prices: PRICES.dynamodb, from: "dynamodb", why: "dynalite counts" },
  { prices: PRICES.gcs, from: "gcs", why: "fake-gcs-server counts" },
  { prices: PRICES.s3, from: "s3", why: "versitygw counts" },
  { prices: PRICES.azureBlob, from: "azure-blob", why: "azurite counts" },
  {
    prices: PRICES.durableObjects,
    from: "sqlite",
    why: "SQLite counts (each store call = one API call to the DO; no watch)",
  },
];

function costTable(results: Measured[]): Table {
  const rows: Array<Array<string | number>> = [];
  for (const { prices, from, why } of COSTED) {
    for (const r of results.filter((m) => m.backend === from)) {
      const scale = SECONDS_PER_MONTH / (r.windowMs / 1000);
      const writes = (r.leader.put + r.followers.put) * scale;
      const reads = (r.leader.get + r.followers.get) * scale;
      rows.push([
        prices.provider,
        label(r.algorithm),
        Math.round(writes),
        Math.round(reads),
        writes * prices.write + reads * prices.read,
        `${prices.basis}; ${why}`,
      ]);
    }
  }
  return {
    title: "Monthly request cost per lease (1 leader + 2 followers)",
    note:
      `leaseMs 15 s, renewMs 5 s, retryMs 2 s; the measured rates above scaled to a 30-day month. List prices as of ` +
      `${PRICES_AS_OF}: check before relying on them. Requests only: no free tier, storage, egress or duration.`,
    columns: ["provider", "elector", "writes / month", "reads / month", "USD / month", "prices and source of counts"],
    rows,
  };
}
