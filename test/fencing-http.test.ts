/**
 * docs/fencing.md, HTTP: the recipe (examples/fencing/http.ts: a Hono app served by
 * @hono/node-server and a plain node:http handler, each behind the fence, and a leader that writes
 * with `fencedFetch`) over real sockets on 127.0.0.1. For both middlewares: a deposed leader's late
 * write is refused with StaleTermError; racing requests of terms 1..16 end on the highest and
 * reach the route in term order (a newer term waits for the older requests already running); what
 * a request without or with bad fence headers gets; the bound on leases kept in memory; and a
 * `TermStore` shared by two replicas (over SQLite, with `fencedUpdate`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { reportsApp, reportsHandler, saveReport } from "../examples/fencing/http.js";
import { LeaseValidationError } from "../src/errors.js";
import {
  fencedFetch,
  fenceHeaders,
  type HttpFenceOptions,
  MemoryTermStore,
  STALE_TERM_PROBLEM,
  StaleTermError,
  TermFence,
  type TermStore,
} from "../src/fencing/http.js";
import { fencedUpdate } from "../src/fencing/sqlite.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { deposedLeaderWrites } from "./support/deposed-leader.js";
import { rejection } from "./support/rejection.js";
import { raceTerms } from "./support/term-race.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-fencing-http-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Save = (id: string, body: string) => Promise<void>;

interface Service {
  url: string;
  /** The bodies the route saved, per report id, in the order it saved them. */
  saved: Map<string, string[]>;
  close(): Promise<void>;
}

const running: Service[] = [];
afterEach(async () => {
  for (const service of running.splice(0)) await service.close();
});

const listening = async (server: Server): Promise<string> => {
  if (!server.listening) await new Promise<void>((resolve) => server.once("listening", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/** Starts the recipe's service of `kind` on a free port; `slow` runs inside the route before it saves. */
async function start(
  kind: "hono" | "node",
  options: HttpFenceOptions = {},
  slow: (id: string, body: string) => Promise<void> = async () => {},
): Promise<Service> {
  const saved = new Map<string, string[]>();
  const save: Save = async (id, body) => {
    await slow(id, body);
    saved.set(id, [...(saved.get(id) ?? []), body]);
  };
  const server =
    kind === "hono"
      ? (serve({ fetch: reportsApp(save, options).fetch, hostname: "127.0.0.1", port: 0 }) as Server)
      : createServer(reportsHandler(save, options)).listen(0, "127.0.0.1");
  const service: Service = {
    url: await listening(server),
    saved,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  running.push(service);
  return service;
}

const put = (url: string, id: string, headers: Record<string, string>, body = "x") =>
  fetch(`${url}/reports/${id}`, { method: "PUT", headers, body });

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

for (const kind of ["hono", "node"] as const) {
  describe(`HTTP fence (${kind === "hono" ? "honoFence, @hono/node-server" : "nodeFence, node:http"})`, () => {
    it("with terms from the library: the deposed leader's late write is StaleTermError, the new leader's stays", async () => {
      const service = await start(kind);
      const id = uniqueName("daily").replaceAll("/", "-");
      const outcome = await deposedLeaderWrites((writer, term) =>
        saveReport(service.url, id, `by ${writer}`, "reports/daily", term),
      );
      expect(outcome).toMatchObject({ oldTerm: 1, newTerm: 2, oldSignalAborted: true });
      expect(outcome.staleError).toBeInstanceOf(StaleTermError);
      expect(outcome.staleError).toMatchObject({ term: 1, seenTerm: 2 });
      expect((outcome.staleError as Error).message).toBe(
        `fenced write to PUT ${service.url}/reports/${id} (lease "reports/daily") refused: it holds term 2, newer than this writer's term 1; a newer leader exists, so stop acting as leader`,
      );
      expect(service.saved.get(id)).toEqual(["by old", "by new"]);
    });

    it("answers an older term 409 problem+json before the route runs; equal and newer terms pass", async () => {
      const service = await start(kind);
      const headers = (term: number) => fenceHeaders({ lease: "reports/daily", term });
      expect((await put(service.url, "a", headers(3), "three")).status).toBe(204);
      const refused = await put(service.url, "a", headers(2), "two");
      expect(refused.status).toBe(409);
      expect(refused.headers.get("content-type")).toBe("application/problem+json");
      expect(await refused.json()).toEqual({
        type: STALE_TERM_PROBLEM,
        title: "Stale term",
        status: 409,
        detail:
          'lease "reports/daily" has written here with term 3, newer than this writer\'s term 2: a newer leader exists, so stop acting as leader',
        lease: "reports/daily",
        term: 2,
        seenTerm: 3,
      });
      expect((await put(service.url, "a", headers(3), "three again")).status).toBe(204);
      expect((await put(service.url, "b", headers(4), "four")).status).toBe(204);
      // Terms are per lease: another lease's term 1 is its own.
      expect((await put(service.url, "c", fenceHeaders({ lease: "reports/weekly", term: 1 }))).status).toBe(204);
      expect(service.saved.get("a")).toEqual(["three", "three again"]);
    });

    it("racing requests of terms 1..16, many rounds: the highest always wins, and the route saves in term order", async () => {
      // The route takes 0-4 ms before it saves, as a write to a database would.
      const service = await start(kind, {}, () => pause(Math.random() * 4));
      const lease = (round: number) => `race/${kind}/${round}`;
      await raceTerms({
        writers: 16,
        rounds: 8,
        write: (round, term, body) => saveReport(service.url, `r${round}`, body, lease(round), term),
        read: async (round) => {
          const last = service.saved.get(`r${round}`)?.at(-1) ?? "";
          return { term: Number(last.replace("by term ", "")), body: last };
        },
        effects: (round) => (service.saved.get(`r${round}`) ?? []).map((b) => Number(b.replace("by term ", ""))),
      });
    });

    it("a newer term waits until the older request already running has finished; an older one arriving meanwhile is refused", async () => {
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let entered = () => {};
      const inside = new Promise<void>((resolve) => {
        entered = resolve;
      });
      const fence = new TermFence();
      const service = await start(kind, { fence }, async (_id, body) => {
        if (body !== "slow, by 1") return;
        entered();
        await held;
      });
      const headers = (term: number) => fenceHeaders({ lease: "reports/held", term });
      const slow = put(service.url, "h", headers(1), "slow, by 1");
      await inside; // term 1 is in the route, and stays there until released
      const newer = put(service.url, "h", headers(2), "by 2");
      // Until term 2 has reached the fence (or, were it not held back, the route).
      while (fence.inFlight("reports/held") < 2 && service.saved.get("h") === undefined) await pause(5);
      expect(service.saved.get("h")).toBeUndefined(); // and is held back behind term 1
      expect((await put(service.url, "h", headers(1), "late, by 1")).status).toBe(409);
      release();
      expect((await slow).status).toBe(204);
      expect((await newer).status).toBe(204);
      expect(service.saved.get("h")).toEqual(["slow, by 1", "by 2"]);
      expect(fence.inFlight("reports/held")).toBe(0);
    });

    it("a request without the fence headers gets 428; bad ones 400 naming the header; nothing reaches the route", async () => {
      const service = await start(kind);
      const cases: Array<[Record<string, string>, number, string]> = [
        [{}, 428, "urn:leasehold:problem:precondition-required"],
        [{ "Leasehold-Term": "3" }, 428, "urn:leasehold:problem:precondition-required"],
        [{ "Leasehold-Term": "0", "Leasehold-Lease": "a" }, 400, "Leasehold-Term"],
        [{ "Leasehold-Term": "1.5", "Leasehold-Lease": "a" }, 400, "Leasehold-Term"],
        [{ "Leasehold-Term": "99999999999999999", "Leasehold-Lease": "a" }, 400, "Leasehold-Term"],
        [{ "Leasehold-Term": "2", "Leasehold-Lease": "A/../b" }, 400, "Leasehold-Lease"],
      ];
      for (const [headers, status, mentions] of cases) {
        const response = await put(service.url, "x", headers);
        expect(response.status, JSON.stringify(headers)).toBe(status);
        expect(response.headers.get("content-type")).toBe("application/problem+json");
        expect(JSON.stringify(await response.json())).toContain(mentions);
      }
      expect(service.saved.size).toBe(0);
    });

    it("with a fixed lease the header may be left out, and must name that lease when sent", async () => {
      const service = await start(kind, { lease: "reports/daily" });
      expect((await put(service.url, "x", { "Leasehold-Term": "2" })).status).toBe(204);
      expect((await put(service.url, "x", { "Leasehold-Term": "1" })).status).toBe(409);
      const other = await put(service.url, "x", fenceHeaders({ lease: "reports/weekly", term: 5 }));
      expect(other.status).toBe(400);
      expect(JSON.stringify(await other.json())).toContain('this resource is fenced by lease \\"reports/daily\\"');
      expect(service.saved.get("x")).toEqual(["x"]);
    });

    it("memory is bounded: past maxLeases a new lease gets 503 and no known term is forgotten", async () => {
      const store = new MemoryTermStore({ maxLeases: 2 });
      const service = await start(kind, { fence: new TermFence({ store }) });
      const write = (lease: string, term: number) => put(service.url, "m", fenceHeaders({ lease, term }));
      expect((await write("a", 5)).status).toBe(204);
      expect((await write("b", 1)).status).toBe(204);
      const full = await write("c", 1);
      expect(full.status).toBe(503);
      expect(JSON.stringify(await full.json())).toContain("at most 2 leases and is full");
      expect((await write("a", 4)).status).toBe(409);
      expect((await write("b", 2)).status).toBe(204);
      expect(store.size).toBe(2);
    });
  });
}

describe("TermStore shared by replicas", () => {
  /** A TermStore over an SQLite table, through `fencedUpdate` (the SQL fence): one row per lease. */
  function sqliteTerms(path: string): TermStore {
    const db = new Database(path);
    db.exec("CREATE TABLE IF NOT EXISTS fence_terms (lease TEXT PRIMARY KEY, term INTEGER NOT NULL)");
    return {
      raise(lease, term) {
        try {
          fencedUpdate(db, { table: "fence_terms", key: { lease }, set: {}, term });
          return term;
        } catch (error) {
          if (error instanceof StaleTermError && error.seenTerm !== undefined) return error.seenTerm;
          throw error;
        }
      },
    };
  }

  it("a stale write sent to the other replica is refused too: the highest term lives in the shared store", async () => {
    const path = join(dir, "terms.db");
    const a = await start("hono", { fence: new TermFence({ store: sqliteTerms(path) }) });
    const b = await start("node", { fence: new TermFence({ store: sqliteTerms(path) }) });
    await saveReport(a.url, "daily", "by 2", "reports/daily", 2);
    const error = await rejection(saveReport(b.url, "daily", "late, by 1", "reports/daily", 1));
    expect(error).toMatchObject({ name: "StaleTermError", term: 1, seenTerm: 2 });
    expect(b.saved.size).toBe(0);
  });
});

describe("the leader's side", () => {
  it("fenceHeaders and fencedFetch check their input, naming the field, and send nothing", async () => {
    let sent = 0;
    const counting = (async () => {
      sent++;
      return new Response(null, { status: 204 });
    }) as typeof fetch;
    const cases: Array<[unknown, string]> = [
      [{ lease: "a", term: 0 }, "term: expected a term >= 1"],
      [{ lease: "A", term: 1 }, "lease: expected 1-"],
      [{ lease: "a", term: 1, extra: true }, "extra: unknown field"],
    ];
    for (const [options, message] of cases) {
      expect(() => fenceHeaders(options as never)).toThrow(LeaseValidationError);
      const error = await rejection(
        fencedFetch("http://127.0.0.1:9/x", {}, { ...(options as object), fetch: counting } as never),
      );
      expect(error).toBeInstanceOf(LeaseValidationError);
      expect((error as Error).message).toContain(message);
    }
    expect(sent).toBe(0);
  });

  it("a 409 that is not the fence's is returned as it is, for the caller to read", async () => {
    const other = (async () =>
      new Response(JSON.stringify({ type: "urn:example:conflict" }), {
        status: 409,
        headers: { "content-type": "application/problem+json" },
      })) as typeof fetch;
    const response = await fencedFetch(
      "http://127.0.0.1:9/x",
      { method: "PUT" },
      { lease: "a", term: 1, fetch: other },
    );
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({ type: "urn:example:conflict" });
  });
});
