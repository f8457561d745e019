/**
 * One bad record never fails a page (issue #30, item 2; the reproduction of its item 1 as a
 * stored record): a record the store cannot read, or one that reads but names what cannot be
 * judged (what 0.1.0 let a write token store), sits among good ones. Through the API in process,
 * on SQLite, Azure Blob (azurite) and S3 (versitygw): every listing that contains it answers 200
 * with the rest of the page and a row for it (its name and why), paging walks past it, GET of it
 * answers 500 `corrupt` naming the fields, the console's prefix stream and `leasehold status`
 * show it as a row, and nothing changes it until an operator's token with the verb `force` clears
 * it (`leasehold release --force`), which the server logs with the token's name.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TokenScope } from "../src/api/auth.js";
import { createLogger } from "../src/api/log.js";
import { runCli } from "../src/cli/program.js";
import { LeaseholdClient } from "../src/http/client.js";
import { readSse } from "../src/http/sse.js";
import { makeRecord } from "../src/testkit/store-contract.js";
import { startApi } from "./support/api-server.js";
import { inProcessApi } from "./support/in-process-api.js";
import { RAW_BACKENDS, type RawBackend, sqliteBackend } from "./support/raw-backends.js";

const ADMIN = "admin-token-0123456789abcdef";
const WRITER = "writer-token-0123456789abcdef";
const OPERATOR = "operator-token-0123456789abcdef";
const tokens: TokenScope[] = [
  { name: "admin", token: ADMIN, prefixes: [""], verbs: ["read", "write", "cas"] },
  { name: "writer", token: WRITER, prefixes: ["a/"], verbs: ["read", "write", "cas"] },
  { name: "operator", token: OPERATOR, prefixes: ["a/"], verbs: ["read", "force"] },
];
const instance = "instance-0123456789abcdef";
const NOT_JSON = '{"name": "a/poison", "holder": ';

/** The API in process on `backend`'s store, its log kept. */
function api(backend: RawBackend) {
  const lines: string[] = [];
  const server = inProcessApi({
    store: backend.store,
    auth: { tokens },
    log: createLogger("json", (line) => lines.push(line)),
  });
  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await server.fetch(`${server.url}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: the tests read the answer field by field
    return { status: res.status, body: (await res.json()) as any };
  };
  const path = (name: string, verb = "") => `${LeaseholdClient.leasePath(name)}${verb}`;
  return { server, lines, call, path };
}

describe.each(RAW_BACKENDS)("a record the store cannot read, on $backend", ({ open }) => {
  let backend: RawBackend;
  let s: ReturnType<typeof api>;
  beforeAll(async () => {
    backend = await open();
    s = api(backend);
    for (const name of ["a/one", "a/two", "b/x"]) {
      const acquired = await s.call("POST", s.path(name, "/acquire"), ADMIN, {
        holder: "h",
        instance,
        leaseMs: 60_000,
      });
      expect(acquired.status).toBe(200);
    }
    await backend.write("a/poison", NOT_JSON);
  });
  afterAll(() => backend?.close());

  it("every listing that contains it answers 200 with the rest of the page and a row naming it and why", async () => {
    const before = await backend.read("a/poison");
    for (const [prefix, names] of [
      ["", ["a/one", "a/two", "b/x"]],
      ["a/", ["a/one", "a/two"]],
      ["a/p", []],
    ] as const) {
      const page = await s.call("GET", `/v1/leases?prefix=${encodeURIComponent(prefix)}`, ADMIN);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      expect(page.body.leases.map((l: { name: string }) => l.name)).toEqual(names);
      expect(page.body.unreadable).toEqual([
        {
          name: "a/poison",
          reason: "corrupt",
          detail: expect.stringContaining('lease "a/poison" holds a record leasehold cannot read'),
          errors: [{ path: "", message: "not valid JSON" }],
        },
      ]);
      expect(page.body.next).toBeNull();
    }
    // A scoped token's listing too.
    expect((await s.call("GET", "/v1/leases?prefix=a/", WRITER)).body.unreadable).toHaveLength(1);
    // Paging walks past it: one entry a page, the unreadable one a page of its own.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `/v1/leases?prefix=&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = await s.call("GET", query, ADMIN);
      expect(page.status).toBe(200);
      seen.push(...page.body.leases.map((l: { name: string }) => l.name));
      seen.push(...page.body.unreadable.map((u: { name: string }) => `!${u.name}`));
      cursor = page.body.next;
    } while (cursor !== null);
    expect(seen).toEqual(["a/one", "!a/poison", "a/two", "b/x"]);
    expect(await backend.read("a/poison")).toEqual(before);
  });

  it("GET of it answers 500 corrupt naming the fields and how to clear it; its neighbours read", async () => {
    const got = await s.call("GET", s.path("a/poison"), ADMIN);
    expect(got.status).toBe(500);
    expect(got.body).toMatchObject({
      type: "urn:leasehold:problem:corrupt",
      errors: [{ path: "", message: "not valid JSON" }],
    });
    expect(got.body.detail).toContain("leasehold release --force");
    expect((await s.call("GET", s.path("a/one"), ADMIN)).status).toBe(200);
  });

  it("nothing but a token with the verb force clears it; it is then released at the term named, and logged", async () => {
    const before = await backend.read("a/poison");
    // A write token's acquire, a token without `force`: refused, the bytes unchanged.
    const acquire = await s.call("POST", s.path("a/poison", "/acquire"), WRITER, {
      holder: "h",
      instance,
      leaseMs: 1000,
    });
    expect(acquire.status).toBe(500);
    expect((await s.call("POST", s.path("a/poison", "/force-release"), WRITER, { term: 4 })).status).toBe(403);
    // Without a term: the record's own cannot be read.
    const termless = await s.call("POST", s.path("a/poison", "/force-release"), OPERATOR, {});
    expect(termless.status).toBe(400);
    expect(termless.body.errors).toEqual([{ path: "term", message: "expected the term for the released record" }]);
    // A readable record is not the operator's to clear.
    const readable = await s.call("POST", s.path("a/one", "/force-release"), OPERATOR, {});
    expect(readable.status).toBe(409);
    expect(readable.body.type).toBe("urn:leasehold:problem:not-corrupt");
    expect(await backend.read("a/poison")).toEqual(before);

    const cleared = await s.call("POST", s.path("a/poison", "/force-release"), OPERATOR, { term: 4 });
    expect(cleared.status, JSON.stringify(cleared.body)).toBe(200);
    expect(cleared.body).toMatchObject({
      leader: false,
      lease: { name: "a/poison", holder: null, term: 4, metadata: {} },
    });
    const audit = s.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "lease force-released");
    expect(audit).toEqual([
      expect.objectContaining({
        lease: "a/poison",
        term: 4,
        by: "operator",
        why: expect.stringContaining("not valid JSON"),
      }),
    ]);
    const page = await s.call("GET", "/v1/leases?prefix=a/", ADMIN);
    expect(page.body.unreadable).toEqual([]);
    expect(page.body.leases.map((l: { name: string }) => l.name)).toEqual(["a/one", "a/poison", "a/two"]);
    // And it is a lease like any other again: the next holder takes term 5.
    const taken = await s.call("POST", s.path("a/poison", "/acquire"), WRITER, {
      holder: "h2",
      instance,
      leaseMs: 1000,
    });
    expect(taken.body).toMatchObject({ leader: true, lease: { term: 5 } });
  });
});

describe("a record that reads but cannot be judged (a bound lease whose session is unreadable), on sqlite", () => {
  // A bound lease reads, but the process session it is judged by is a record nobody can read.
  const poisoned = makeRecord("a/poison", {
    holder: "x",
    term: 3,
    leaseMs: 60_000,
    session: { name: "_sessions/p", term: 1 },
    metadata: { note: "n" },
  });
  let backend: RawBackend;
  let s: ReturnType<typeof api>;
  beforeAll(async () => {
    backend = await sqliteBackend();
    s = api(backend);
    await s.call("POST", s.path("a/one", "/acquire"), ADMIN, { holder: "h", instance, leaseMs: 60_000 });
    await backend.write("a/poison", JSON.stringify({ ...poisoned, renewedAt: Date.now() }));
    await backend.write("_sessions/p", "{not json");
  });
  afterAll(() => backend?.close());

  it("is a row of its own in the listing, the console's stream and leasehold status; GET names why", async () => {
    const before = await backend.read("a/poison");
    const page = await s.call("GET", "/v1/leases?prefix=", ADMIN);
    expect(page.status).toBe(200);
    expect(page.body.leases.map((l: { name: string }) => l.name)).toEqual(["a/one"]);
    // Each bad record is a row of its own: the session the store cannot read, the lease judged by it.
    expect(page.body.unreadable).toEqual([
      expect.objectContaining({ name: "_sessions/p", reason: "corrupt" }),
      {
        name: "a/poison",
        reason: "unjudgeable",
        detail: expect.stringMatching(/^lease "a\/poison" cannot be judged: .*"_sessions\/p"/),
        errors: [{ path: "", message: "not valid JSON" }],
      },
    ]);
    const got = await s.call("GET", s.path("a/poison"), ADMIN);
    expect(got.status).toBe(500);
    expect(got.body.type).toBe("urn:leasehold:problem:corrupt");
    expect(got.body.detail).toMatch(/cannot be judged/);

    // The console's prefix stream: its snapshot carries the row and the lease beside it.
    const done = new AbortController();
    const res = await s.server.fetch(`${s.server.url}/v1/watch?prefix=a/`, {
      headers: { Authorization: `Bearer ${ADMIN}` },
      signal: done.signal,
    });
    expect(res.status).toBe(200);
    const events = readSse(res.body!)[Symbol.asyncIterator]();
    const first = await events.next();
    done.abort();
    await events.return?.();
    expect(first.value?.event).toBe("snapshot");
    const snapshot = JSON.parse(first.value!.data);
    expect(snapshot.leases.map((l: { lease: { name: string } }) => l.lease.name)).toEqual(["a/one"]);
    expect(snapshot.unreadable).toEqual([expect.objectContaining({ name: "a/poison", reason: "unjudgeable" })]);
    expect(await backend.read("a/poison")).toEqual(before);
  });

  it("leasehold status over the API lists it as a row; release --force keeps its term and drops its metadata", async () => {
    const server = await startApi({
      store: backend.store,
      tokens,
      log: createLogger("json", (line) => s.lines.push(line)),
    });
    try {
      const out: string[] = [];
      const err: string[] = [];
      const cli = (args: string[], token: string) =>
        runCli(args, { env: { LEASEHOLD_TOKEN: token }, out: (l) => out.push(l), say: (l) => err.push(l) });
      expect(await cli(["status", "a/", "--store", server.url, "--json"], ADMIN)).toBe(0);
      const views = JSON.parse(out.at(-1)!);
      expect(views.map((v: { name: string; state: string }) => [v.name, v.state])).toEqual([
        ["a/one", "held"],
        ["a/poison", "unreadable"],
      ]);
      out.length = 0;
      expect(await cli(["status", "a/", "--store", server.url], ADMIN)).toBe(0);
      expect(out.find((l) => l.startsWith("a/poison"))).toMatch(/UNREADABLE: not valid JSON/);

      // --force with the operator's token: the server clears it, keeping term 3.
      expect(await cli(["release", "a/poison", "--force", "--store", server.url, "--json"], OPERATOR)).toBe(0);
      expect(JSON.parse(out.at(-1)!)).toMatchObject({
        released: true,
        forced: true,
        holder: null,
        term: 3,
        metadata: {},
      });
      const audit = s.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "lease force-released");
      expect(audit).toEqual([expect.objectContaining({ lease: "a/poison", term: 3, by: "operator" })]);
      expect((await s.call("GET", "/v1/leases?prefix=a/", ADMIN)).body.unreadable).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe("leasehold release --force on a store URL (no API)", () => {
  it("clears a row SQLite cannot read at the term named, and refuses a readable one or a missing term", async () => {
    const backend = await sqliteBackend();
    try {
      await backend.store.put(makeRecord("jobs/ok", { holder: "h", term: 2 }), null);
      await backend.write("jobs/bad", "not json at all");
      const path = (backend.store as unknown as { path: string }).path;
      const out: string[] = [];
      const err: string[] = [];
      const cli = (args: string[]) => runCli(args, { env: {}, out: (l) => out.push(l), say: (l) => err.push(l) });
      expect(await cli(["release", "jobs/bad", "--force", "--store", `sqlite:${path}`])).toBe(1);
      expect(err.at(-1)).toMatch(/its term cannot be read: pass --term N/);
      expect(await cli(["release", "jobs/ok", "--force", "--store", `sqlite:${path}`])).toBe(1);
      expect(err.at(-1)).toMatch(/reads \(held by h, term 2\): --force clears only a record leasehold cannot read/);
      expect(await cli(["release", "jobs/bad", "--force", "--holder", "h", "--store", `sqlite:${path}`])).toBe(2);
      expect((await backend.read("jobs/bad")).body).toBe("not json at all");
      expect(await cli(["release", "jobs/bad", "--force", "--term", "9", "--store", `sqlite:${path}`])).toBe(0);
      expect(err.at(-1)).toMatch(/cleared "jobs\/bad": released at term 9 \(it was: .*not valid JSON/);
      expect((await backend.store.get("jobs/bad"))?.record).toMatchObject({ holder: null, term: 9 });
    } finally {
      await backend.close();
    }
  });
});
