/**
 * Watch streams under a flood (docs/security.md "Bounds"): one read token opens 10,000 watch
 * streams against the Node server, 100 at a time, holding each round's open until the next round
 * starts; with the per-token bound at its default (100) the rest are refused with 429. In four
 * floods of 2,500, we print the answers, the process's memory after each (all streams closed) and
 * what the server still holds (its gauges). Before the bound, 2,000 streams from one token cost
 * +120 MB RSS and 2,000 store reads per second (issue #20).
 */

import { MemoryStore } from "../src/backends/memory/store.js";
import { serve } from "../src/runtime/node.js";
import { machineLoad, QUICK, sleep } from "./support/common.js";
import type { Table } from "./table.js";

const ATTEMPTS = QUICK ? 1000 : 10_000;
const AT_ONCE = 100;
/** Floods in a row: memory that stays flat from one to the next holds nothing per attempt. */
const FLOODS = 4;
const TOKEN = "watch-bench-token-0123456789";

const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;

export async function run(): Promise<Table[]> {
  const server = await serve({
    store: new MemoryStore(),
    port: 0,
    tokens: [{ name: "reader", token: TOKEN, prefixes: [""], verbs: ["read", "metrics"] }],
    heartbeatMs: 60_000,
  });
  const memory = () => process.memoryUsage();
  const gc = (globalThis as { gc?: () => void }).gc;
  const settle = async () => {
    gc?.();
    await sleep(500);
    gc?.();
  };
  const gauge = async (name: string) => {
    const text = await (await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
    return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1]);
  };
  const statuses = new Map<number, number>();
  const rows: Array<Array<string | number>> = [];
  /** One flood of `attempts`; every stream is closed at its end. */
  const flood = async (attempts: number): Promise<{ peak: number; open: number }> => {
    let held: AbortController[] = [];
    let peak = memory().rss;
    for (let done = 0; done < attempts; done += AT_ONCE) {
      const round = await Promise.all(
        Array.from({ length: AT_ONCE }, async (_, i) => {
          const stop = new AbortController();
          const res = await fetch(`${server.url}/v1/leases/${encodeURIComponent(`flood/${i % 20}`)}/watch`, {
            headers: { Authorization: `Bearer ${TOKEN}` },
            signal: stop.signal,
          });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status !== 200) await res.body?.cancel();
          return { res, stop };
        }),
      );
      for (const h of held) h.abort();
      held = round.filter((r) => r.res.status === 200).map((r) => r.stop);
      peak = Math.max(peak, memory().rss);
    }
    const open = await gauge("leasehold_watch_streams_open");
    for (const h of held) h.abort();
    await settle();
    return { peak, open };
  };
  try {
    await settle();
    const before = memory();
    rows.push(["0 (before)", mb(before.rss), "—", mb(before.heapUsed), "—", "—"]);
    for (let n = 1; n <= FLOODS; n++) {
      const { peak, open } = await flood(ATTEMPTS / FLOODS);
      const after = memory();
      rows.push([
        (n * ATTEMPTS) / FLOODS,
        mb(after.rss),
        mb(peak),
        mb(after.heapUsed),
        open,
        `${await gauge("leasehold_watch_streams_open")} / ${await gauge("leasehold_watched_leases")}`,
      ]);
    }
  } finally {
    await server.close();
  }
  const answers = [...statuses].map(([s, n]) => `${n} x ${s}`).join(", ");
  return [
    {
      title: "Watch streams: 10,000 attempts from one token",
      note: `${ATTEMPTS} attempts in ${FLOODS} floods, ${AT_ONCE} at a time, each round's streams held until the next round, all closed after each flood; watchStreamsPerToken 100 (default). Answers: ${answers}. Client and server share the process (the RSS includes the client's sockets). MB; ${gc ? "after gc()" : "without --expose-gc (heap numbers include garbage)"}. ${machineLoad()} at the end.`,
      columns: [
        "attempts so far",
        "RSS MB after",
        "RSS MB peak",
        "heap used MB after",
        "streams open at the flood's end",
        "streams / watched leases after closing",
      ],
      rows,
    },
  ];
}
