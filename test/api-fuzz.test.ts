/**
 * Random bodies, names and headers against the real server: the answer is always 2xx or 4xx
 * (never 5xx), every 4xx is problem+json, a rejected request changes no lease, and no request
 * whatever its token breaks the term rules (a term never goes down or skips, a new holder takes
 * exactly term + 1, a release keeps the term). Seeded (FUZZ_SEED overrides) so a run repeats.
 */
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Problem } from "../src/http/schemas.js";
import type { Stored } from "../src/lease.js";
import { MemoryStore } from "../src/stores/memory.js";
import { startApi, TOKENS } from "./support/api-server.js";

const store = new MemoryStore();
let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  api = await startApi({ store });
  // A few leases to hit: held, released.
  for (const [name, holder] of [
    ["adapters/a", "alice"],
    ["jobs/b", "bob"],
  ] as const) {
    await fetch(`${api.url}/v1/leases/${encodeURIComponent(name)}/acquire`, {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKENS.admin}`, "Content-Type": "application/json" },
      body: JSON.stringify({ holder, leaseMs: 60_000 }),
    });
  }
});
afterAll(() => api.close());

async function snapshot(): Promise<Stored[]> {
  const out: Stored[] = [];
  for await (const s of store.list("")) out.push(s);
  return out;
}

const printable = fc.string({ unit: fc.constantFrom(..."abcXYZ019 -_./:;=\"'*%{}[],@!~"), maxLength: 40 });
const names = fc.oneof(
  fc.constantFrom("adapters/a", "jobs/b", "adapters/new", "x", "a".repeat(193), "", "Upper", "..", "a/", "/a"),
  fc.string({ maxLength: 30 }),
  fc.stringMatching(/^[a-z0-9][a-z0-9._/-]{0,20}[a-z0-9]$/),
);
const bodies = fc.oneof(
  fc
    .record(
      {
        holder: fc.oneof(fc.constantFrom("alice", "bob", "mallory", ""), fc.string({ maxLength: 300 }), fc.integer()),
        leaseMs: fc.oneof(fc.integer({ min: -10, max: 100_000_000 }), fc.double(), fc.string({ maxLength: 5 })),
        term: fc.oneof(fc.integer({ min: -1, max: 5 }), fc.constant(1.5), fc.string({ maxLength: 3 })),
        metadata: fc.oneof(
          fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 200 }), { maxKeys: 8 }),
          fc.anything(),
        ),
        writeId: fc.string({ maxLength: 70 }),
        acquiredAt: fc.oneof(fc.integer(), fc.double()),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  fc.json().map(String),
  fc.string({ maxLength: 200 }),
  fc.constant("x".repeat(5000)),
);
/** Writes aimed at the term rules: terms around the current one, holder swaps, stale and bad If-Match. */
const termWrite = fc.record({
  name: fc.constantFrom("adapters/a", "jobs/b"),
  holder: fc.constantFrom("alice", "bob", "mallory", null),
  termDelta: fc.constantFrom(-1, 0, 1, 2),
  ifMatch: fc.constantFrom("current", "current", "stale", '"abc"', '"0"', "1", "*", 'W/"1"'),
  auth: fc.constantFrom(TOKENS.admin, TOKENS.adapters, TOKENS.reader),
});

const request = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH"),
  route: fc.constantFrom("/acquire", "/renew", "/release", "/watch", "", "/nope"),
  name: names,
  encode: fc.boolean(),
  body: fc.option(bodies, { nil: undefined }),
  contentType: fc.option(
    fc.oneof(
      fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", "application/jsonx"),
      printable,
    ),
    { nil: undefined },
  ),
  auth: fc.option(
    fc.oneof(
      fc.constantFrom(TOKENS.admin, TOKENS.reader, TOKENS.adapters).map((t) => `Bearer ${t}`),
      printable,
    ),
    { nil: undefined },
  ),
  ifMatch: fc.option(fc.oneof(fc.constant("*"), printable, fc.constantFrom('"1"', '"2"', '"999"')), { nil: undefined }),
  ifNoneMatch: fc.option(fc.oneof(fc.constant("*"), printable), { nil: undefined }),
  query: fc.option(printable, { nil: undefined }),
});

const seed = Number(process.env.FUZZ_SEED ?? 20261203);

/** The term rules, restated independently of src/term-rules.ts, over every lease a request touched. */
function expectTermRulesKept(before: Stored[], after: Stored[], what: string): void {
  for (const now of after) {
    const was = before.find((b) => b.record.name === now.record.name)?.record;
    const r = now.record;
    if (!was) {
      if (r.holder !== null) expect(r.term, what).toBeGreaterThanOrEqual(1);
      continue;
    }
    expect(r.term, what).toBeGreaterThanOrEqual(was.term);
    expect(r.term, what).toBeLessThanOrEqual(was.term + 1);
    if (r.holder === null) expect(r.term, what).toBe(was.term);
    else if (r.holder !== was.holder) expect(r.term, what).toBe(was.term + 1);
  }
}

it("term-rule writes: only those keeping the rules on the current revision apply, the rest change nothing", async () => {
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(termWrite, async (w) => {
      const before = await snapshot();
      const current = before.find((s) => s.record.name === w.name);
      if (!current) throw new Error(`fixture lease ${w.name} is missing`);
      const revision = current.revision;
      const ifMatch =
        w.ifMatch === "current" ? `"${revision}"` : w.ifMatch === "stale" ? `"${Number(revision) + 7}"` : w.ifMatch;
      const res = await fetch(`${api.url}/v1/leases/${encodeURIComponent(w.name)}`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${w.auth}`, "Content-Type": "application/json", "If-Match": ifMatch },
        body: JSON.stringify({
          holder: w.holder,
          term: Math.max(0, current.record.term + w.termDelta),
          leaseMs: 60_000,
          metadata: {},
          writeId: crypto.randomUUID(),
          acquiredAt: 0,
        }),
      });
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const what = `${JSON.stringify(w)} -> ${res.status} ${text}`;
      const after = await snapshot();
      expect(res.status, what).toBeLessThan(500);
      expectTermRulesKept(before, after, what);
      if (res.status >= 400) {
        expect(after, what).toEqual(before);
        if (res.status === 400) expect(JSON.parse(text).errors[0].path, what).toBe("If-Match");
      } else {
        expect(res.status, what).toBe(200);
        expect(w.ifMatch, what).toBe("current");
      }
    }),
    { numRuns: 300, seed },
  );
  // Each family was reached: applied, malformed header, auth, wrong term, stale revision.
  expect([...statuses.keys()]).toEqual(expect.arrayContaining([200, 400, 403, 409, 412]));
});

it("never answers 5xx, always problem+json on 4xx, and a rejected request changes nothing", async () => {
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      const name = r.encode ? encodeURIComponent(r.name) : r.name;
      const watch = r.route === "/watch";
      const base = r.name === "" && r.route === "" ? "/v1/leases" : `/v1/leases/${name}${r.route}`;
      const url = `${api.url}${base}${r.query ? `?${encodeURI(r.query)}` : ""}`;
      const headers: Record<string, string> = {};
      if (r.auth !== undefined) headers.Authorization = r.auth;
      if (r.contentType !== undefined) headers["Content-Type"] = r.contentType;
      if (r.ifMatch !== undefined) headers["If-Match"] = r.ifMatch;
      if (r.ifNoneMatch !== undefined) headers["If-None-Match"] = r.ifNoneMatch;
      const before = await snapshot();
      const stop = new AbortController();
      let res: Response;
      try {
        res = await fetch(url, {
          method: r.method,
          headers,
          ...(r.body !== undefined && r.method !== "GET" ? { body: r.body } : {}),
          signal: stop.signal,
        });
      } catch (error) {
        // fetch itself refuses some URLs (e.g. malformed); nothing reached the server.
        expect((error as Error).name).toMatch(/TypeError/);
        return;
      }
      const type = res.headers.get("content-type") ?? "";
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (watch && res.status === 200) {
        expect(type).toContain("text/event-stream");
        stop.abort();
        return;
      }
      const text = await res.text();
      expectTermRulesKept(before, await snapshot(), `${r.method} ${base} -> ${res.status} ${text}`);
      expect(res.status, `${r.method} ${base} -> ${res.status} ${text}`).toBeGreaterThanOrEqual(200);
      expect(res.status, `${r.method} ${base} -> ${res.status} ${text}`).toBeLessThan(500);
      if (res.status >= 400) {
        expect(type).toBe("application/problem+json");
        const problem = Problem.parse(JSON.parse(text));
        expect(problem.status).toBe(res.status);
        expect(await snapshot()).toEqual(before);
      }
    }),
    { numRuns: 400, seed },
  );
  // The generator must reach both sides: accepted requests and each family of rejection.
  const seen = [...statuses.keys()];
  expect(seen).toEqual(expect.arrayContaining([200, 400, 401, 404, 415]));
});
