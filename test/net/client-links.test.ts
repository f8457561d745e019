/**
 * The client's own links with real sockets (docs/partitions.md, "What else a dead link did"):
 * - a watch stream (Server-Sent Events) on a link that goes dead (blackholed by Toxiproxy: no
 *   byte, no close) does not stay "open" forever: with no keep-alive for `watchIdleMs` the client
 *   drops it and reconnects, and the iteration ends in an error once reconnecting fails, instead
 *   of a follower that never hears of a release;
 * - a kept-alive connection whose peer vanished behind the same dead link is not reused forever
 *   after the heal: the call on it times out, and the next one (a new connection) is answered.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpStore } from "../../src/backends/http/store.js";
import { LeaseholdClient } from "../../src/http/client.js";
import type { RunningServer } from "../../src/runtime/node.js";
import { startApi, TOKENS } from "../support/api-server.js";
import { type ToxiProxy, testToxiproxy, uniqueProxyName } from "../support/toxiproxy.js";

let api: RunningServer;
let link: ToxiProxy;

beforeAll(async () => {
  api = await startApi({ heartbeatMs: 100 });
  link = await testToxiproxy().createProxy(uniqueProxyName("client-link"), api.url);
});

afterAll(async () => {
  await link?.delete();
  await api?.close();
});

describe("the client's links", () => {
  it("a watch stream on a dead link is dropped after watchIdleMs, and the watch fails instead of hanging", async () => {
    const client = new LeaseholdClient({ baseUrl: link.url, token: TOKENS.admin, watchIdleMs: 500 });
    const stop = new AbortController();
    const events: unknown[] = [];
    const watching = (async () => {
      for await (const event of client.watch("net/watched", stop.signal)) {
        events.push(event);
        if (events.length === 1) await link.partition("blackhole");
      }
    })();
    // Before: it waited forever. Now the stream goes idle, every reconnect goes unanswered, and it throws.
    const outcome = await Promise.race([
      watching.then(
        () => "ended",
        (error: Error) => `threw ${error.name}`,
      ),
      new Promise((resolve) => setTimeout(() => resolve("still open after 20 s"), 20_000)),
    ]);
    stop.abort();
    await link.heal();
    expect(events).toHaveLength(1);
    expect(outcome).toMatch(/^threw /);
  }, 30_000);

  it("a kept-alive connection behind a link that went dead and healed: one call times out, the next is answered", async () => {
    const store = new HttpStore({ baseUrl: link.url, token: TOKENS.admin, timeoutMs: 500 });
    expect(await store.get("net/kept-alive")).toBeNull(); // a connection is open and pooled
    await link.partition("blackhole");
    await expect(store.get("net/kept-alive")).rejects.toThrow();
    await link.heal();
    // The pooled connection lost bytes in the cut: the client must not keep using it.
    let answered = false;
    for (let i = 0; i < 3 && !answered; i++) {
      answered = await store.get("net/kept-alive").then(
        () => true,
        () => false,
      );
    }
    expect(answered).toBe(true);
  }, 30_000);
});
