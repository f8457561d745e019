/**
 * Every resource a caller can consume has a bound (docs/security.md, "Bounds"): watch streams per
 * token and in total, new records per token prefix and per minute, bucket writes per heartbeat
 * (in process), and the Node listener's own: header and request timeouts, oversized headers,
 * malformed requests and a connection cap, answered as problem+json on real sockets. Over a bound:
 * 429 or 503 with Retry-After and a problem naming the bound; nothing else changes, and nothing is
 * left behind (10,000 watch attempts leave no stream, feed or counter open).
 */
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { TokenScope } from "../src/api/auth.js";
import { ManualClock } from "../src/clock.js";
import { LeaseholdClient } from "../src/http/client.js";
import type { LeaseStore } from "../src/lease.js";
import type { RunningServer } from "../src/runtime/node.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { startApi, TOKEN_SCOPES, TOKENS } from "./support/api-server.js";
import { inProcessApi } from "./support/in-process-api.js";

const path = (name: string, suffix = "") => `${LeaseholdClient.leasePath(name)}${suffix}`;
const INSTANCE = "bounds-instance-0000000001";

async function problemOf(res: Response) {
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  return (await res.json()) as { type: string; status: number; bound?: string; detail: string };
}

describe("watch streams", () => {
  it("past the per-token bound a new stream is 429 naming it, with Retry-After; closing one makes room", async () => {
    const api = inProcessApi({ limits: { watchStreamsPerToken: 3 }, heartbeatMs: 60_000 });
    const open = async (token: string = TOKENS.admin) => {
      const stop = new AbortController();
      const res = await api.fetch(`${api.url}${path("jobs/watched", "/watch")}`, {
        headers: { Authorization: `Bearer ${token}` },
        signal: stop.signal,
      });
      return { res, stop };
    };
    const streams = [await open(), await open(), await open()];
    for (const s of streams) expect(s.res.status).toBe(200);
    const over = await open();
    expect(over.res.status).toBe(429);
    expect(over.res.headers.get("retry-after")).toBe("5");
    expect(await problemOf(over.res)).toMatchObject({
      type: "urn:leasehold:problem:over-limit",
      bound: "watchStreamsPerToken",
    });
    // Another token has its own count.
    expect((await open(TOKENS.reader)).res.status).toBe(200);
    streams[0]!.stop.abort();
    await streams[0]!.res.body?.cancel().catch(() => undefined);
    await until(async () => (await open()).res.status === 200);
  });

  it("past the server's bound a new stream is 503 naming it, whatever the token", async () => {
    const api = inProcessApi({ limits: { watchStreams: 2 }, heartbeatMs: 60_000 });
    const open = (token: string) =>
      api.fetch(`${api.url}${path("adapters/watched", "/watch")}`, { headers: { Authorization: `Bearer ${token}` } });
    expect((await open(TOKENS.admin)).status).toBe(200);
    expect((await open(TOKENS.reader)).status).toBe(200);
    const over = await open(TOKENS.adapters);
    expect(over.status).toBe(503);
    expect(over.headers.get("retry-after")).toBe("5");
    expect(await problemOf(over)).toMatchObject({ type: "urn:leasehold:problem:over-capacity", bound: "watchStreams" });
  });

  it("10,000 watch attempts, most over the bound, leave nothing behind once their streams close", async () => {
    const api = inProcessApi({ limits: { watchStreamsPerToken: 50 }, heartbeatMs: 60_000, watchPollMs: 60_000 });
    const statuses = new Map<number, number>();
    for (let round = 0; round < 100; round++) {
      const stops: AbortController[] = [];
      const answers = await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          const stop = new AbortController();
          stops.push(stop);
          const res = await api.fetch(`${api.url}${path(`jobs/w${i % 10}`, "/watch")}`, {
            headers: { Authorization: `Bearer ${TOKENS.admin}` },
            signal: stop.signal,
          });
          if (res.status !== 200) await res.body?.cancel();
          return res;
        }),
      );
      for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      for (const stop of stops) stop.abort();
      await Promise.all(answers.map((a) => a.body?.cancel().catch(() => undefined)));
    }
    expect(statuses.get(200)).toBe(100 * 50);
    expect(statuses.get(429)).toBe(100 * 50);
    // Every accepted stream ended: no count, no feed, no poll left running for a lease.
    const gauge = async (name: string) => {
      const text = await (
        await api.fetch(`${api.url}/metrics`, { headers: { Authorization: `Bearer ${TOKENS.admin}` } })
      ).text();
      return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1]);
    };
    await until(async () => (await gauge("leasehold_watch_streams_open")) === 0);
    expect(await gauge("leasehold_watched_leases")).toBe(0);
    // And the bound counts from zero again: 50 streams open at once, not one more.
    expect(
      (
        await api.fetch(`${api.url}${path("jobs/again", "/watch")}`, {
          headers: { Authorization: `Bearer ${TOKENS.admin}` },
        })
      ).status,
    ).toBe(200);
  });
});

describe("records", () => {
  const scoped: TokenScope = {
    name: "team",
    token: "team-token-0123456789",
    prefixes: ["team/"],
    verbs: ["read", "write", "cas"],
  };

  it("a create past recordsPerPrefix under the token's prefix is 429 naming it; renewals and other prefixes go on", async () => {
    const api = inProcessApi({ auth: { tokens: [...TOKEN_SCOPES, scoped] }, limits: { recordsPerPrefix: 3 } });
    const acquire = (name: string, token = scoped.token) =>
      api.fetch(`${api.url}${path(name, "/acquire")}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ holder: "h", instance: INSTANCE, leaseMs: 60_000 }),
      });
    for (const n of ["team/a", "team/b", "team/c"]) expect((await acquire(n)).status).toBe(200);
    const over = await acquire("team/d");
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("60");
    expect(await problemOf(over)).toMatchObject({ bound: "recordsPerPrefix" });
    const put = await api.fetch(`${api.url}${path("team/e")}`, {
      method: "PUT",
      headers: {
        Authorization: `Bearer ${scoped.token}`,
        "Content-Type": "application/json",
        "If-None-Match": "*",
        "Leasehold-Instance": INSTANCE,
      },
      body: JSON.stringify({ holder: "h", term: 1, leaseMs: 1000, metadata: {}, writeId: "w", acquiredAt: 0 }),
    });
    expect(put.status).toBe(429);
    expect(await api.store.get("team/d")).toBeNull();
    expect(await api.store.get("team/e")).toBeNull();
    // What exists renews; another prefix counts on its own.
    expect((await acquire("team/a")).status).toBe(200);
    expect((await acquire("jobs/a", TOKENS.admin)).status).toBe(200);
  });

  it("past createsPerMinute a token's next create is 429 naming it, until the minute has refilled", async () => {
    const clock = new ManualClock();
    const api = inProcessApi({ clock, limits: { createsPerMinute: 2 } });
    const acquire = (name: string) =>
      api.fetch(`${api.url}${path(name, "/acquire")}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKENS.admin}`, "Content-Type": "application/json" },
        body: JSON.stringify({ holder: "h", instance: INSTANCE, leaseMs: 60_000 }),
      });
    const root = uniqueName("rate");
    expect((await acquire(`${root}/1`)).status).toBe(200);
    expect((await acquire(`${root}/2`)).status).toBe(200);
    const over = await acquire(`${root}/3`);
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("30");
    expect(await problemOf(over)).toMatchObject({ bound: "createsPerMinute" });
    expect((await acquire(`${root}/1`)).status).toBe(200); // a renewal creates nothing
    await clock.advance(30_000);
    expect((await acquire(`${root}/3`)).status).toBe(200);
  });

  it("one heartbeat writes at most bucketWritesPerHeartbeat bucket records; the rest come with the next ones", async () => {
    const api = inProcessApi({ limits: { bucketWritesPerHeartbeat: 8 } });
    const client = new LeaseholdClient({ baseUrl: api.url, fetch: api.fetch, token: TOKENS.admin, retries: 0 });
    const group = `adapters/${uniqueName("big")}`;
    let written = 0;
    const count = async () => {
      let n = 0;
      for await (const _ of api.store.list!(`${group}/_buckets/`)) n++;
      return n;
    };
    const first = await client.heartbeat(group, "m1", { instance: INSTANCE, leaseMs: 60_000, buckets: 64 });
    expect(first.settled).toBe(false);
    written = await count();
    expect(written).toBeLessThanOrEqual(8);
    let beat = first;
    for (let i = 0; i < 40 && !beat.settled; i++) {
      beat = await client.heartbeat(group, "m1", { instance: INSTANCE, session: first.session, leaseMs: 60_000 });
    }
    expect(beat.settled).toBe(true);
    expect(beat.held).toHaveLength(64);
  });
});

describe("the Node listener", () => {
  let server: (RunningServer & { store: LeaseStore }) | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  /** A raw connection, to send what fetch never would: slow, oversized or broken requests. */
  function rawSocket(port: number, options: { from?: string; ignoresFin?: boolean } = {}) {
    const socket = connect({
      port,
      host: "127.0.0.1",
      // A client that ignores the server's FIN: only the server can end the connection then.
      allowHalfOpen: options.ignoresFin === true,
      ...(options.from ? { localAddress: options.from } : {}),
    });
    let received = "";
    socket.on("data", (d: Buffer) => {
      received += d.toString();
    });
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.on("error", () => undefined);
    return { socket, closed, received: () => received };
  }

  /** Writes one byte every `everyMs` until the socket closes or `max` bytes are sent; returns how many. */
  async function dribble(socket: Socket, text: string, everyMs: number): Promise<number> {
    let sent = 0;
    for (const ch of text) {
      if (socket.destroyed || socket.readableEnded) break;
      socket.write(ch);
      sent++;
      await new Promise((r) => setTimeout(r, everyMs));
    }
    return sent;
  }

  function statusAndProblem(raw: string) {
    const [head, body] = raw.split("\r\n\r\n");
    return {
      status: Number(head?.split(" ")[1]),
      head: head ?? "",
      problem: JSON.parse(body ?? "{}") as Record<string, unknown>,
    };
  }

  it("a client too slow with its headers gets 408 problem+json and is disconnected, long before it would have finished", async () => {
    server = await startApi({ listener: { headersTimeoutMs: 300, requestTimeoutMs: 600 } });
    const { socket, closed, received } = rawSocket(server.port);
    // 300 bytes at one per 50 ms would take 15 s to send.
    const headers = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${"x".repeat(250)}\r\n\r\n`;
    const sent = await dribble(socket, headers, 50);
    await closed;
    expect(sent).toBeLessThan(headers.length);
    const answer = statusAndProblem(received());
    expect(answer.status).toBe(408);
    expect(answer.head).toContain("Content-Type: application/problem+json");
    expect(answer.problem).toMatchObject({ type: "urn:leasehold:problem:request-timeout", status: 408 });
  });

  it("a client too slow with its body gets 408 problem+json and is disconnected", async () => {
    server = await startApi({ listener: { headersTimeoutMs: 300, requestTimeoutMs: 600 } });
    const { socket, closed, received } = rawSocket(server.port);
    const body = JSON.stringify({ holder: "h", instance: INSTANCE, leaseMs: 1000, metadata: { pad: "x".repeat(200) } });
    socket.write(
      `POST ${path("jobs/slow", "/acquire")} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKENS.admin}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    const sent = await dribble(socket, body, 50);
    await closed;
    expect(sent).toBeLessThan(body.length);
    const answer = statusAndProblem(received());
    expect(answer.status).toBe(408);
    expect(answer.problem).toMatchObject({ type: "urn:leasehold:problem:request-timeout" });
    expect(await server.store.get("jobs/slow")).toBeNull();
  });

  it("oversized headers are 431 and a request that is not HTTP is 400, both problem+json", async () => {
    server = await startApi({});
    const big = rawSocket(server.port);
    big.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"x".repeat(20_000)}\r\n\r\n`);
    await big.closed;
    expect(statusAndProblem(big.received())).toMatchObject({
      status: 431,
      problem: { type: "urn:leasehold:problem:headers-too-large" },
    });
    const junk = rawSocket(server.port);
    junk.socket.write("HELLO THERE\r\n\r\n");
    await junk.closed;
    expect(statusAndProblem(junk.received())).toMatchObject({
      status: 400,
      problem: { type: "urn:leasehold:problem:bad-request" },
    });
  });

  it("past maxConnections a new connection is answered 503 with Retry-After and closed; the open ones are served", async () => {
    server = await startApi({ listener: { maxConnections: 2 } });
    const held = [rawSocket(server.port), rawSocket(server.port)];
    await new Promise((r) => setTimeout(r, 100));
    const third = rawSocket(server.port);
    await third.closed;
    const answer = statusAndProblem(third.received());
    expect(answer.status).toBe(503);
    expect(answer.head).toContain("Retry-After: 1");
    expect(answer.problem).toMatchObject({ type: "urn:leasehold:problem:over-capacity", bound: "maxConnections" });
    held[0]!.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    await held[0]!.closed;
    expect(statusAndProblem(held[0]!.received()).status).toBe(200);
    for (const h of held) h.socket.destroy();
  });

  /** Writes one byte every `everyMs` whatever the server answers, until the socket is gone; returns how many. */
  async function trickle(socket: Socket, everyMs: number): Promise<number> {
    let sent = 0;
    while (!socket.destroyed && socket.writable) {
      socket.write("x");
      sent++;
      await new Promise((r) => setTimeout(r, everyMs));
    }
    return sent;
  }

  it("a client that ignores its 408 or 431 and keeps sending is disconnected after a short grace", async () => {
    server = await startApi({ listener: { headersTimeoutMs: 300, requestTimeoutMs: 600 } });
    // Header lines trickled past the header timeout, then on and on after the 408.
    const slow = rawSocket(server.port, { ignoresFin: true });
    slow.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    const slowSent = trickle(slow.socket, 50);
    // Oversized headers, then more of them after the 431.
    const big = rawSocket(server.port, { ignoresFin: true });
    big.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"x".repeat(20_000)}`);
    const bigSent = trickle(big.socket, 50);
    await Promise.all([slow.closed, big.closed]);
    // Closed by the server while the clients were still sending: they never stop on their own.
    expect(await slowSent).toBeGreaterThan(0);
    expect(await bigSent).toBeGreaterThan(0);
    expect(statusAndProblem(slow.received()).status).toBe(408);
    expect(statusAndProblem(big.received()).status).toBe(431);
  });

  it("past maxConnectionsPerAddress a new connection from that address is 503 naming it; other addresses are served", async () => {
    server = await startApi({ listener: { maxConnections: 10, maxConnectionsPerAddress: 2 } });
    const held = [rawSocket(server.port, { from: "127.0.0.2" }), rawSocket(server.port, { from: "127.0.0.2" })];
    await Promise.all(held.map((h) => new Promise((r) => h.socket.once("connect", r))));
    await new Promise((r) => setTimeout(r, 100));
    const third = rawSocket(server.port, { from: "127.0.0.2", ignoresFin: true });
    // It ignores the answer and keeps sending: closed all the same.
    third.socket.once("connect", () => void trickle(third.socket, 50));
    await third.closed;
    const answer = statusAndProblem(third.received());
    expect(answer.status).toBe(503);
    expect(answer.head).toContain("Retry-After: 1");
    expect(answer.problem).toMatchObject({
      type: "urn:leasehold:problem:over-capacity",
      bound: "maxConnectionsPerAddress",
    });
    // Another address has slots of its own, and the two held connections are served.
    const other = rawSocket(server.port, { from: "127.0.0.1" });
    other.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    await other.closed;
    expect(statusAndProblem(other.received()).status).toBe(200);
    held[0]!.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    await held[0]!.closed;
    expect(statusAndProblem(held[0]!.received()).status).toBe(200);
    // A slot freed is a slot again.
    const again = rawSocket(server.port, { from: "127.0.0.2" });
    again.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    await again.closed;
    expect(statusAndProblem(again.received()).status).toBe(200);
    for (const h of held) h.socket.destroy();
  });

  it("an idle keep-alive connection is closed after keepAliveTimeoutMs", async () => {
    server = await startApi({ listener: { keepAliveTimeoutMs: 200 } });
    const { socket, closed, received } = rawSocket(server.port);
    socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await closed; // by the server: the client never closes it
    expect(statusAndProblem(received()).status).toBe(200);
  });
});

async function until(condition: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}
