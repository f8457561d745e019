/**
 * Random bodies, names and headers against the app in process: the answer is always 2xx or 4xx
 * (never 5xx), every 4xx is problem+json, a refused request changes nothing, and whatever its
 * token no request
 * - breaks the term rules (a term never goes down or skips, a new holder takes exactly term + 1,
 *   a release keeps the term);
 * - changes a live lease, or a live member's session or buckets, without the instance that holds
 *   it (impersonation: the holder's name, the member's id, any token);
 * - writes a sharded group's records through the plain routes;
 * - is served for a name with an empty, "." or ".." segment.
 * Seeded (FUZZ_SEED overrides) so a run repeats.
 */
import fc from "fast-check";
import { beforeAll, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { Problem } from "../src/http/schemas.js";
import type { Stored } from "../src/lease.js";
import { readable } from "../src/listing.js";
import { TOKENS } from "./support/api-server.js";
import { inProcessApi } from "./support/in-process-api.js";

const store = new MemoryStore();
const api = inProcessApi({ store });

const INSTANCES = {
  alice: "alice-instance-000000000001",
  bob: "bob-instance-00000000000001",
  m1: "member-m1-instance-00000001",
  mallory: "mallory-instance-000000001",
} as const;
const GROUP = "adapters/g";

/** Which instance holds each watched lease or session now (undefined: free, anyone may take it). */
const holding = new Map<string, string | undefined>();

async function post(path: string, body: unknown): Promise<Response> {
  return api.fetch(`${api.url}${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${TOKENS.admin}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

beforeAll(async () => {
  // A few leases to hit, held for a minute (nothing expires during the run), and a group whose
  // member m1 holds every bucket.
  for (const [name, holder] of [
    ["adapters/a", "alice"],
    ["jobs/b", "bob"],
  ] as const) {
    const res = await post(`/v1/leases/${encodeURIComponent(name)}/acquire`, {
      holder,
      instance: INSTANCES[holder],
      leaseMs: 60_000,
    });
    expect(res.status).toBe(200);
    holding.set(name, INSTANCES[holder]);
  }
  const beat = await post(`/v1/groups/${encodeURIComponent(GROUP)}/members/m1/heartbeat`, {
    instance: INSTANCES.m1,
    leaseMs: 60_000,
    buckets: 4,
  });
  expect(beat.status).toBe(200);
  holding.set(`${GROUP}/_members/m1`, INSTANCES.m1);
});

async function snapshot(): Promise<Stored[]> {
  const out: Stored[] = [];
  for await (const s of readable(store.list(""))) out.push(s);
  return out;
}

const isGroupRecord = (name: string) => name.startsWith(`${GROUP}/`);

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

/**
 * The holding rules, restated: a watched lease held by an instance changes only by a request that
 * carried that instance; m1's buckets only move with m1's; the plain routes never touch the
 * group's records. Updates who holds what from the writes that applied.
 */
function expectHoldingKept(
  before: Stored[],
  after: Stored[],
  carried: string | undefined,
  plain: boolean,
  what: string,
): void {
  const m1Buckets = new Set(
    before
      .filter((s) => s.record.name.startsWith(`${GROUP}/_buckets/`) && s.record.holder === "m1")
      .map((s) => s.record.name),
  );
  for (const now of after) {
    const name = now.record.name;
    const was = before.find((b) => b.record.name === name);
    if (was?.revision === now.revision) continue;
    if (plain) expect(isGroupRecord(name), `${what}: a plain route wrote ${name}`).toBe(false);
    const owner = m1Buckets.has(name) ? holding.get(`${GROUP}/_members/m1`) : holding.get(name);
    if (owner !== undefined) expect(carried, `${what}: ${name} changed without its holder's instance`).toBe(owner);
    if (holding.has(name)) holding.set(name, now.record.holder === null ? undefined : carried);
  }
}

/** Writes aimed at the term and holding rules: terms around the current one, holder swaps, instances, stale and bad If-Match. */
const termWrite = fc.record({
  name: fc.constantFrom("adapters/a", "jobs/b"),
  holder: fc.constantFrom("alice", "bob", "mallory", null),
  termDelta: fc.constantFrom(-1, 0, 1, 2),
  instance: fc.constantFrom(INSTANCES.alice, INSTANCES.bob, INSTANCES.mallory),
  ifMatch: fc.constantFrom("current", "current", "stale", '"abc"', '"0"', "1", "*", 'W/"1"'),
  auth: fc.constantFrom(TOKENS.admin, TOKENS.adapters, TOKENS.reader),
});

const seed = Number(process.env.FUZZ_SEED ?? 20261203);

it("term-rule writes: only those keeping the term and holding rules on the current revision apply, the rest change nothing", async () => {
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(termWrite, async (w) => {
      const before = await snapshot();
      const current = before.find((s) => s.record.name === w.name);
      if (!current) throw new Error(`fixture lease ${w.name} is missing`);
      const revision = current.revision;
      const ifMatch =
        w.ifMatch === "current" ? `"${revision}"` : w.ifMatch === "stale" ? `"${Number(revision) + 7}"` : w.ifMatch;
      const res = await api.fetch(`${api.url}/v1/leases/${encodeURIComponent(w.name)}`, {
        method: "PUT",
        headers: {
          Authorization: `Bearer ${w.auth}`,
          "Content-Type": "application/json",
          "If-Match": ifMatch,
          "Leasehold-Instance": w.instance,
        },
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
      expectHoldingKept(before, after, w.instance, true, what);
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
  // Each family was reached: applied, malformed header, auth, wrong term or holder, stale revision.
  expect([...statuses.keys()]).toEqual(expect.arrayContaining([200, 400, 403, 409, 412]));
});

const printable = fc.string({ unit: fc.constantFrom(..."abcXYZ019 -_./:;=\"'*%{}[],@!~"), maxLength: 40 });
/** Names of every kind: fixtures, the group's records, traversal (plain and percent-encoded), junk. */
const names = fc.oneof(
  fc.constantFrom(
    "adapters/a",
    "jobs/b",
    "adapters/new",
    "x",
    `${GROUP}/_config`,
    `${GROUP}/_members/m1`,
    `${GROUP}/_members/m2`,
    `${GROUP}/_buckets/0`,
    `${GROUP}/_buckets/3`,
    `${GROUP}/_buckets/9`,
  ),
  fc.constantFrom(
    "adapters/../jobs/b",
    "adapters/x/../../jobs/b",
    "adapters/./a",
    "adapters//a",
    "adapters/a/..",
    "../adapters/a",
    "..",
    ".",
    "adapters/.a",
    "a".repeat(193),
    "",
    "Upper",
    "a/",
    "/a",
  ),
  fc.string({ maxLength: 30 }),
  fc.stringMatching(/^[a-z0-9][a-z0-9._/-]{0,20}[a-z0-9]$/),
);
const instances = fc.oneof(
  fc.constantFrom(...Object.values(INSTANCES), "short", "has space in it 0123456789"),
  fc.string({ maxLength: 70 }),
);
const bodies = fc.oneof(
  fc
    .record(
      {
        holder: fc.oneof(
          fc.constantFrom("alice", "bob", "mallory", "m1", ""),
          fc.string({ maxLength: 300 }),
          fc.integer(),
        ),
        instance: instances,
        leaseMs: fc.oneof(fc.integer({ min: -10, max: 100_000_000 }), fc.double(), fc.string({ maxLength: 5 })),
        term: fc.oneof(fc.integer({ min: -1, max: 5 }), fc.constant(1.5), fc.string({ maxLength: 3 })),
        session: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.string({ maxLength: 3 })),
        bucket: fc.oneof(fc.integer({ min: -1, max: 5 }), fc.constant(4096)),
        buckets: fc.oneof(fc.integer({ min: 0, max: 10 }), fc.constant(4097)),
        metadata: fc.oneof(
          fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 200 }), { maxKeys: 8 }),
          fc.constant({ "leasehold.instance": "x".repeat(43) }),
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

const request = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH"),
  route: fc.constantFrom("/acquire", "/renew", "/release", "/watch", "", "/nope"),
  group: fc.option(fc.constantFrom("/heartbeat", "/handoff", "/leave"), { nil: undefined, freq: 3 }),
  member: fc.constantFrom("m1", "m2", "M1", "..", "m1/../m2"),
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
  instanceHeader: fc.option(instances, { nil: undefined }),
  query: fc.option(printable, { nil: undefined }),
});

/**
 * Requests that pass authentication and parsing, so they reach the rules: impersonation (a
 * fixture's holder name or member id with another instance), plain writes to the group's records,
 * traversal names, each with a well-formed body.
 */
const plausible = fc
  .record({
    kind: fc.constantFrom("lease", "lease", "put", "group"),
    route: fc.constantFrom("/acquire", "/renew", "/release"),
    group: fc.constantFrom("/heartbeat", "/handoff", "/leave"),
    member: fc.constantFrom("m1", "m1", "m2"),
    name: fc.constantFrom(
      "adapters/a",
      "jobs/b",
      `${GROUP}/_config`,
      `${GROUP}/_members/m1`,
      `${GROUP}/_members/m2`,
      `${GROUP}/_buckets/0`,
      `${GROUP}/_buckets/7`,
      "adapters/../jobs/b",
      "adapters/./a",
      "adapters//a",
    ),
    holder: fc.constantFrom("alice", "bob", "m1", "mallory", null),
    instance: fc.constantFrom(...Object.values(INSTANCES)),
    term: fc.integer({ min: 0, max: 3 }),
    bucket: fc.integer({ min: 0, max: 4 }),
    token: fc.constantFrom(TOKENS.admin, TOKENS.adapters),
    ifMatch: fc.constantFrom('"1"', '"2"', '"3"', '"4"', undefined),
  })
  .map((p) => {
    const leaseBody = {
      holder: p.holder ?? "mallory",
      instance: p.instance,
      ...(p.route === "/acquire" ? { leaseMs: 60_000 } : { term: Math.max(1, p.term) }),
    };
    const groupBody = {
      instance: p.instance,
      ...(p.group === "/heartbeat" ? { leaseMs: 60_000 } : { session: Math.max(1, p.term) }),
      ...(p.group === "/handoff" ? { bucket: p.bucket, term: Math.max(1, p.term) } : {}),
    };
    const record = {
      holder: p.holder,
      term: p.term,
      leaseMs: 60_000,
      metadata: {},
      writeId: crypto.randomUUID(),
      acquiredAt: 0,
    };
    const body = p.kind === "group" ? groupBody : p.kind === "put" ? record : leaseBody;
    return {
      method: p.kind === "put" ? "PUT" : "POST",
      route: p.kind === "put" ? "" : p.route,
      group: p.kind === "group" ? p.group : undefined,
      member: p.member,
      name: p.kind === "group" ? GROUP : p.name,
      encode: true,
      body: JSON.stringify(body),
      contentType: "application/json",
      auth: `Bearer ${p.token}`,
      ifMatch: p.kind === "put" ? p.ifMatch : undefined,
      ifNoneMatch: p.kind === "put" && p.ifMatch === undefined ? "*" : undefined,
      instanceHeader: p.kind === "put" ? p.instance : undefined,
      query: undefined,
    };
  });

/** The instance a request carried: its body's `instance`, else its Leasehold-Instance header. */
function carriedInstance(body: string | undefined, header: string | undefined): string | undefined {
  try {
    const parsed = JSON.parse(body ?? "") as { instance?: unknown } | null;
    if (typeof parsed?.instance === "string") return parsed.instance;
  } catch {
    // not JSON: no instance in it
  }
  return header?.trim();
}

it("never answers 5xx, always problem+json on 4xx, never serves a moving name, and a refused request changes nothing", async () => {
  const statuses = new Map<number, number>();
  const kinds = new Set<string>();
  await fc.assert(
    fc.asyncProperty(fc.oneof(request, plausible), async (r) => {
      const segment = r.encode ? encodeURIComponent(r.name) : r.name;
      const groupRoute = r.group !== undefined;
      const base = groupRoute
        ? `/v1/groups/${segment}/members/${r.encode ? encodeURIComponent(r.member) : r.member}${r.group}`
        : r.name === "" && r.route === ""
          ? "/v1/leases"
          : `/v1/leases/${segment}${r.route}`;
      const watch = !groupRoute && r.route === "/watch";
      const url = `${api.url}${base}${r.query ? `?${encodeURI(r.query)}` : ""}`;
      const headers: Record<string, string> = {};
      if (r.auth !== undefined) headers.Authorization = r.auth;
      if (r.contentType !== undefined) headers["Content-Type"] = r.contentType;
      if (r.ifMatch !== undefined) headers["If-Match"] = r.ifMatch;
      if (r.ifNoneMatch !== undefined) headers["If-None-Match"] = r.ifNoneMatch;
      if (r.instanceHeader !== undefined) headers["Leasehold-Instance"] = r.instanceHeader;
      const before = await snapshot();
      const stop = new AbortController();
      let res: Response;
      try {
        res = await api.fetch(url, {
          method: r.method,
          headers,
          ...(r.body !== undefined && r.method !== "GET" ? { body: r.body } : {}),
          signal: stop.signal,
        });
      } catch (error) {
        // fetch itself refuses some URLs and headers (e.g. malformed); nothing reached the server.
        expect((error as Error).name).toMatch(/TypeError/);
        return;
      }
      const type = res.headers.get("content-type") ?? "";
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const what = `${r.method} ${base} ${r.body?.slice(0, 120) ?? ""} -> ${res.status}`;
      const decoded = (() => {
        try {
          return decodeURIComponent(segment);
        } catch {
          return segment;
        }
      })();
      const moves = r.name !== "" && decoded.split("/").some((s) => s === "" || s === "." || s === "..");
      if (moves) expect(res.status, what).toBeGreaterThanOrEqual(400);
      if (watch && res.status === 200) {
        expect(type).toContain("text/event-stream");
        stop.abort();
        return;
      }
      const text = await res.text();
      const after = await snapshot();
      expectTermRulesKept(before, after, `${what} ${text}`);
      expectHoldingKept(before, after, carriedInstance(r.body, r.instanceHeader), !groupRoute, `${what} ${text}`);
      expect(res.status, `${what} ${text}`).toBeGreaterThanOrEqual(200);
      expect(res.status, `${what} ${text}`).toBeLessThan(500);
      if (res.status >= 400) {
        expect(type).toBe("application/problem+json");
        const problem = Problem.parse(JSON.parse(text));
        expect(problem.status).toBe(res.status);
        kinds.add(problem.type.split(":").at(-1) ?? "");
        expect(after, what).toEqual(before);
      }
    }),
    { numRuns: 600, seed },
  );
  // The generator must reach both sides: accepted requests and each family of rejection, the
  // impersonations and group-record writes included.
  expect([...statuses.keys()]).toEqual(expect.arrayContaining([200, 400, 401, 403, 404, 409, 412, 415]));
  expect([...kinds]).toEqual(expect.arrayContaining(["holder-in-use", "member-in-use", "group-record", "conflict"]));
});
