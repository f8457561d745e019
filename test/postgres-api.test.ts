/**
 * The API on PostgreSQL (`LEASEHOLD_STORE=postgres://...`), as users run it:
 * - three `npm start` processes over one database (test/support/replicas.ts) whose watch re-read is
 *   an hour away: a follower watching through replica B takes over when the leader releases
 *   through replica A, so B heard the release by NOTIFY (nothing else could have told it);
 * - `leasehold serve --store postgres://...`;
 * - the Lambda handler with LEASEHOLD_STORE=postgres://... and the password from PGPASSWORD.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpStore } from "../src/backends/http/store.js";
import { Elector } from "../src/leader/elector.js";
import { createHandler } from "../src/runtime/lambda.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { TEST_INSTANCE } from "./support/api-server.js";
import { CliProcesses, until } from "./support/cli-processes.js";
import { type Replica, startReplica } from "./support/replicas.js";

const url = process.env.POSTGRES_URL!;
const table = "api_leases";
const storeUrl = `${url}?table=${table}`;
const admin = new pg.Pool({ connectionString: url, max: 1 });
afterAll(() => admin.end());

const holderOf = async (name: string) =>
  (
    await admin.query(
      `SELECT record->>'holder' AS holder, (record->>'term')::int AS term FROM ${table} WHERE name = $1`,
      [name],
    )
  ).rows[0];

describe("three API server processes over one PostgreSQL database", () => {
  let a: Replica;
  let b: Replica;
  let c: Replica;
  beforeAll(async () => {
    // An hour between re-reads of watched leases: only a push can tell a replica of a change.
    const env = { LEASEHOLD_STORE: storeUrl, LEASEHOLD_WATCH_POLL_MS: "3600000" };
    [a, b, c] = (await Promise.all(["A", "B", "C"].map((n) => startReplica(n, env)))) as [Replica, Replica, Replica];
  }, 120_000);
  afterAll(async () => {
    await Promise.all([a, b, c].map((r) => r?.stop()));
  });

  it("a follower watching through replica B takes over when the leader releases through replica A: B heard it by NOTIFY", async () => {
    const name = uniqueName("replicas");
    // The follower's own poll is a minute away too.
    const timing = { leaseMs: 120_000, renewMs: 60_000, retryMs: 60_000, pollMs: 60_000, jitter: 0 };
    const leader = new Elector({ ...timing, name, identity: "leader", store: new HttpStore({ baseUrl: a.url }) });
    const follower = new Elector({ ...timing, name, identity: "follower", store: new HttpStore({ baseUrl: b.url }) });
    const elected = (e: Elector) => new Promise<{ term: number }>((resolve) => e.on("elected", resolve));
    const leading = elected(leader);
    leader.start();
    expect(await leading).toMatchObject({ term: 1 });
    const following = elected(follower);
    follower.start();
    await until("the follower to see the leader", () => follower.current.holder === "leader", 30_000);
    await leader.stop();
    expect(await following).toMatchObject({ term: 2 });
    expect(await holderOf(name)).toEqual({ holder: "follower", term: 2 });
    await follower.stop();
    // And the third replica serves the same leases.
    const res = await fetch(`${c.url}/v1/leases/${encodeURIComponent(name)}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name, holder: null, term: 2 });
  });
});

describe("leasehold serve --store postgres://", () => {
  const procs = new CliProcesses();
  afterAll(() => procs.killAll());

  it("serves the API on the database", async () => {
    const serve = procs.start(["serve", "--port", "0", "--json", "--store", storeUrl]);
    const { url: api } = await until("the listening address", () => {
      const line = serve.stdout().split("\n")[0];
      return line ? (JSON.parse(line) as { url: string }) : undefined;
    });
    const name = uniqueName("served");
    const res = await fetch(`${api}/v1/leases/${encodeURIComponent(name)}/acquire`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ holder: "cli", instance: TEST_INSTANCE, leaseMs: 10_000 }),
    });
    expect(res.status).toBe(200);
    expect(await holderOf(name)).toEqual({ holder: "cli", term: 1 });
    serve.child.kill("SIGTERM");
    expect((await serve.exited).code).toBe(0);
  });
});

describe("the Lambda handler on postgres://", () => {
  it("answers an acquire with the password from PGPASSWORD", async () => {
    const withoutPassword = new URL(storeUrl);
    const password = withoutPassword.password;
    withoutPassword.password = "";
    const handler = await createHandler(
      { LEASEHOLD_STORE: withoutPassword.href, PGPASSWORD: password, LEASEHOLD_INSECURE_NO_AUTH: "1" },
      { log: () => undefined },
    );
    const name = uniqueName("lambda");
    const rawPath = `/v1/leases/${encodeURIComponent(name)}/acquire`;
    const body = JSON.stringify({ holder: "fn", instance: TEST_INSTANCE, leaseMs: 10_000 });
    const response = (await handler(
      {
        version: "2.0",
        routeKey: "$default",
        rawPath,
        rawQueryString: "",
        headers: {
          host: "abc.lambda-url.us-east-1.on.aws",
          "content-type": "application/json",
          "content-length": String(body.length),
        },
        requestContext: {
          accountId: "anonymous",
          apiId: "abc",
          domainName: "abc.lambda-url.us-east-1.on.aws",
          domainPrefix: "abc",
          http: { method: "POST", path: rawPath, protocol: "HTTP/1.1", sourceIp: "203.0.113.7", userAgent: "test" },
          requestId: "r1",
          routeKey: "$default",
          stage: "$default",
          time: "05/Dec/2026:00:00:00 +0000",
          timeEpoch: Date.now(),
        },
        body,
        isBase64Encoded: false,
      } as never,
      { getRemainingTimeInMillis: () => 30_000 } as never,
    )) as { statusCode: number; body: string };
    expect(response.statusCode).toBe(200);
    expect(await holderOf(name)).toEqual({ holder: "fn", term: 1 });
  });
});
