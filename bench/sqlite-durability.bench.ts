/**
 * What durability costs the API on SQLite, and what group commit wins back: acquisitions and
 * renewals per second and p99 latency through the HTTP API (`serve()` on SQLite in its own
 * process, autocannon in this one), for
 *   - NORMAL: the old store (synchronous=NORMAL, each write committed alone on the server's
 *     thread): fast, and loses acknowledged writes on power loss (test/sqlite-power-loss.test.ts);
 *   - FULL, one commit at a time: the old store with synchronous=FULL, one fsync per write on the
 *     server's only thread;
 *   - FULL + group commit: the store users get (writer thread, one fsync per batch).
 * at 1, 16 and 256 concurrent clients. Each client leads a lease of its own in a loop of
 * acquire (a new term), 14 renewals and a release: every request is one read and one conditional
 * write on the store. The three servers run side by side on files in the OS temp folder (a real
 * disk here) and are measured in turn, twice per client count in alternating order, so all three
 * meet the same load.
 */
import autocannon from "autocannon";
import { machineLoad, QUICK, tempDir } from "./support/common.js";
import { type SqliteApi, startSqliteApi } from "./support/sqlite-api.js";
import type { Table } from "./table.js";

const MODES = [
  { label: "NORMAL (old)", baseline: "normal" },
  { label: "FULL, one commit at a time", baseline: "full-inline" },
  { label: "FULL + group commit", baseline: undefined },
] as const;
const CLIENTS = [1, 16, 256];
const ROUNDS = 2;
const SECONDS = QUICK ? 2 : 5;
const RENEWALS_PER_TERM = 14;

interface Cell {
  ops: number;
  seconds: number;
  p99: number[];
  errors: number;
}

let leaseSeq = 0;

/** One autocannon run; counts the acquisitions and renewals answered 2xx. */
async function measure(
  url: string,
  clients: number,
): Promise<{ ops: number; seconds: number; p99: number; errors: number }> {
  let ops = 0;
  const json = { "content-type": "application/json" };
  const count = (status: number) => {
    if (status < 300) ops++;
  };
  const renew: autocannon.Request = {
    method: "POST",
    headers: json,
    setupRequest: (request, context) => ({
      ...request,
      path: `/v1/leases/${context.name}/renew`,
      body: JSON.stringify({ holder: "bench", term: context.term }),
    }),
    onResponse: count,
  };
  const result = await autocannon({
    url,
    connections: clients,
    duration: SECONDS,
    requests: [
      {
        method: "POST",
        headers: json,
        setupRequest: (request, context) => {
          context.name ??= encodeURIComponent(`bench/${process.pid}-${leaseSeq++}`);
          return {
            ...request,
            path: `/v1/leases/${context.name}/acquire`,
            body: JSON.stringify({ holder: "bench", leaseMs: 60_000 }),
          };
        },
        onResponse: (status, body, context) => {
          count(status);
          if (status < 300) context.term = (JSON.parse(body) as { lease: { term: number } }).lease.term;
        },
      },
      ...Array.from({ length: RENEWALS_PER_TERM }, () => renew),
      {
        method: "POST",
        headers: json,
        setupRequest: (request, context) => ({
          ...request,
          path: `/v1/leases/${context.name}/release`,
          body: JSON.stringify({ holder: "bench", term: context.term }),
        }),
      },
    ],
  });
  return {
    ops,
    seconds: result.duration,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  };
}

export async function run(): Promise<Table[]> {
  const dir = tempDir("durability");
  const loadBefore = machineLoad();
  const servers: SqliteApi[] = [];
  try {
    for (const [i, mode] of MODES.entries()) servers.push(await startSqliteApi(dir.path(`${i}.db`), mode.baseline));
    const cells = new Map<string, Cell>();
    for (const clients of CLIENTS) {
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
        for (const i of order) {
          const m = await measure(servers[i]!.url, clients);
          const key = `${i}/${clients}`;
          const cell = cells.get(key) ?? { ops: 0, seconds: 0, p99: [], errors: 0 };
          cell.ops += m.ops;
          cell.seconds += m.seconds;
          cell.p99.push(m.p99);
          cell.errors += m.errors;
          cells.set(key, cell);
        }
      }
    }
    const rate = (i: number, clients: number) => {
      const c = cells.get(`${i}/${clients}`)!;
      return c.ops / c.seconds;
    };
    return [
      {
        title: "SQLite durability: acquisitions and renewals per second through the API",
        note:
          `autocannon on 127.0.0.1 against the API (Node, SQLite on the OS temp folder's disk) in its own process; each ` +
          `client leads its own lease: acquire, ${RENEWALS_PER_TERM} renewals, release, repeated. ${ROUNDS} runs of ` +
          `${SECONDS} s per cell, the three stores alternating; p99 in ms is the worse of the runs. "vs NORMAL" is ` +
          `throughput over NORMAL's at the same client count. NORMAL loses acknowledged writes on power loss. Load: ` +
          `${loadBefore} before, ${machineLoad()} after.`,
        columns: ["store", "clients", "acquisitions + renewals / s", "p99 ms", "vs NORMAL", "non-2xx or errors"],
        rows: CLIENTS.flatMap((clients) =>
          MODES.map((mode, i) => {
            const cell = cells.get(`${i}/${clients}`)!;
            return [
              mode.label,
              clients,
              rate(i, clients),
              Math.max(...cell.p99),
              `${(rate(i, clients) / rate(0, clients)).toFixed(2)} ×`,
              cell.errors,
            ];
          }),
        ),
      },
    ];
  } finally {
    for (const server of servers) server.stop();
    dir.remove();
  }
}
