/**
 * The Lambda handler with real event shapes (API Gateway HTTP API v2 and a Function URL, both
 * payload format 2.0) against dynalite, through the DynamoDB store chosen by LEASEHOLD_STORE; and
 * each variable the Lambda entry reads (or refuses), through its exported factory.
 */
import { Storage } from "@google-cloud/storage";
import type { LambdaContext as Context } from "hono/aws-lambda";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseValidationError } from "../src/errors.js";
import { createHandler, createStreamingHandler, STREAMING_HINT } from "../src/runtime/lambda.js";
import { serve } from "../src/runtime/node.js";
import { TEST_INSTANCE, withInstance } from "./support/api-server.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";

const TOKEN = "lambda-token-0123456789abcdef";
let handler: Awaited<ReturnType<typeof createHandler>>;
let table = "";
const logs: string[] = [];
const log = (line: string) => logs.push(line);

beforeAll(async () => {
  // Lambda hands the SDK its role's credentials through the process environment.
  vi.stubEnv("AWS_ACCESS_KEY_ID", "leasehold-test");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "leasehold-test");
  table = await createLeaseTable(dynamoClient(testEndpoint()));
  handler = await createHandler(
    {
      LEASEHOLD_STORE: `dynamodb://${table}?region=us-east-1&endpoint=${encodeURIComponent(testEndpoint())}`,
      LEASEHOLD_TOKENS: JSON.stringify([{ token: TOKEN, prefixes: ["adapters/"], verbs: ["read", "write", "cas"] }]),
    },
    { log },
  );
});
afterAll(() => vi.unstubAllEnvs());

const context = {
  callbackWaitsForEmptyEventLoop: false,
  functionName: "leasehold-api",
  functionVersion: "$LATEST",
  invokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:leasehold-api",
  memoryLimitInMB: "256",
  awsRequestId: "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
  logGroupName: "/aws/lambda/leasehold-api",
  logStreamName: "2026/12/02/[$LATEST]abcdef",
  getRemainingTimeInMillis: () => 30_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
} as Context;

function event(
  kind: "http-api" | "function-url",
  method: string,
  rawPath: string,
  options: { body?: unknown; token?: string | null; rawQueryString?: string; headers?: Record<string, string> } = {},
) {
  const domainName =
    kind === "http-api"
      ? "r3pmxmplak.execute-api.us-east-1.amazonaws.com"
      : "abcdefghijklmnop.lambda-url.us-east-1.on.aws";
  const body = options.body === undefined ? undefined : JSON.stringify(withInstance(rawPath, options.body));
  // Function URLs deliver bodies base64-encoded; the HTTP API passes JSON as text.
  const base64 = kind === "function-url" && body !== undefined;
  const token = options.token === undefined ? TOKEN : options.token;
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath,
    rawQueryString: options.rawQueryString ?? "",
    cookies: [],
    headers: {
      accept: "*/*",
      host: domainName,
      "user-agent": "curl/8.5.0",
      "x-forwarded-for": "203.0.113.7",
      "x-forwarded-proto": "https",
      ...(body === undefined ? {} : { "content-type": "application/json", "content-length": String(body.length) }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...options.headers,
    },
    requestContext: {
      accountId: kind === "http-api" ? "123456789012" : "anonymous",
      apiId: kind === "http-api" ? "r3pmxmplak" : "abcdefghijklmnop",
      domainName,
      domainPrefix: domainName.split(".")[0],
      http: { method, path: rawPath, protocol: "HTTP/1.1", sourceIp: "203.0.113.7", userAgent: "curl/8.5.0" },
      requestId: "JKJaXmPLvHcESHA=",
      routeKey: "$default",
      stage: "$default",
      time: "02/Dec/2026:14:00:00 +0000",
      timeEpoch: 1_796_220_000_000,
    },
    ...(body === undefined
      ? {}
      : { body: base64 ? Buffer.from(body).toString("base64") : body, isBase64Encoded: base64 }),
    ...(body === undefined ? { isBase64Encoded: false } : {}),
  };
}

async function invoke(e: ReturnType<typeof event>, via = handler) {
  const res = (await via(e as never, context)) as {
    statusCode: number;
    headers: Record<string, string>;
    body: string;
  };
  return {
    status: res.statusCode,
    type: res.headers["content-type"],
    body: res.body ? JSON.parse(res.body) : undefined,
  };
}

describe.each(["http-api", "function-url"] as const)("lambda handler (%s event)", (kind) => {
  const name = `adapters/${kind}`;
  const path = `/v1/leases/${encodeURIComponent(name)}`;

  it("acquire, conflict, renew, get, release: the lease lives in DynamoDB", async () => {
    const a = await invoke(event(kind, "POST", `${path}/acquire`, { body: { holder: "fn-a", leaseMs: 10_000 } }));
    expect(a).toMatchObject({ status: 200, body: { leader: true, lease: { name, holder: "fn-a", term: 1 } } });
    const b = await invoke(event(kind, "POST", `${path}/acquire`, { body: { holder: "fn-b", leaseMs: 10_000 } }));
    expect(b).toMatchObject({
      status: 409,
      type: "application/problem+json",
      body: { leader: false, lease: { holder: "fn-a" } },
    });
    const renewed = await invoke(event(kind, "POST", `${path}/renew`, { body: { holder: "fn-a", term: 1 } }));
    expect(renewed).toMatchObject({ status: 200, body: { leader: true } });
    const got = await invoke(event(kind, "GET", path));
    expect(got).toMatchObject({
      status: 200,
      body: { holder: "fn-a", term: 1, revision: renewed.body.lease.revision },
    });
    const released = await invoke(event(kind, "POST", `${path}/release`, { body: { holder: "fn-a", term: 1 } }));
    expect(released).toMatchObject({ status: 200, body: { lease: { holder: null, term: 1 } } });
    const listed = await invoke(event(kind, "GET", "/v1/leases", { rawQueryString: "prefix=adapters%2F" }));
    expect(listed.body.leases.map((l: { name: string }) => l.name)).toContain(name);
  });

  it("auth and validation errors come back as problem+json", async () => {
    expect(await invoke(event(kind, "GET", path, { token: null }))).toMatchObject({
      status: 401,
      type: "application/problem+json",
    });
    expect(await invoke(event(kind, "GET", `/v1/leases/${encodeURIComponent("jobs/x")}`))).toMatchObject({
      status: 403,
    });
    const bad = await invoke(event(kind, "POST", `${path}/acquire`, { body: { holder: "x", leaseMs: -1 } }));
    expect(bad).toMatchObject({ status: 400, body: { errors: [{ path: "leaseMs" }] } });
  });
});

describe("lambda configuration: each variable the Lambda entry reads", () => {
  const dynamo = () => `dynamodb://${table}?region=us-east-1&endpoint=${encodeURIComponent(testEndpoint())}`;
  const tokens = JSON.stringify([{ name: "fn", token: TOKEN, prefixes: [""], verbs: ["read", "write", "cas"] }]);
  const refusal = async (env: Record<string, string>) => {
    const error = await createHandler(env, { log }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LeaseValidationError);
    return (error as Error).message;
  };
  const acquire = (name: string, token: string | null = TOKEN) =>
    event("function-url", "POST", `/v1/leases/${encodeURIComponent(name)}/acquire`, {
      body: { holder: "fn-a", leaseMs: 10_000 },
      token,
    });

  it("LEASEHOLD_STORE: required, and a store each instance would keep to itself is refused", async () => {
    expect(await refusal({ LEASEHOLD_TOKENS: tokens })).toContain(
      "LEASEHOLD_STORE: not set: expected a shared store such as dynamodb://",
    );
    expect(await refusal({ LEASEHOLD_STORE: "memory:", LEASEHOLD_TOKENS: tokens })).toContain(
      "LEASEHOLD_STORE: the memory store does not run on Lambda: each Lambda instance would keep its own leases",
    );
    expect(await refusal({ LEASEHOLD_STORE: "sqlite:/tmp/leases.db", LEASEHOLD_TOKENS: tokens })).toContain(
      "LEASEHOLD_STORE: the sqlite store does not run on Lambda",
    );
  });

  it("LEASEHOLD_TOKENS: required unless the insecure flag; the start-up line names scopes, never a token", async () => {
    expect(await refusal({ LEASEHOLD_STORE: dynamo() })).toContain(
      "LEASEHOLD_TOKENS: not set: the Lambda handler is reachable by anyone, so it needs tokens: set LEASEHOLD_TOKENS, or LEASEHOLD_INSECURE_NO_AUTH=1 if you really mean it (behind IAM auth only)",
    );
    logs.length = 0;
    const via = await createHandler(
      { LEASEHOLD_STORE: dynamo(), LEASEHOLD_TOKENS: tokens, AWS_LAMBDA_FUNCTION_NAME: "leasehold-api" },
      { log },
    );
    expect(logs).toEqual([
      `API on Lambda (leasehold-api, buffered, no watch streams); store ${dynamo()}; auth: 1 token (fn: read+write+cas on all leases); maxSkewMs 1000, watchPollMs 1000, heartbeatMs 15000, storeTimeoutMs 2000`,
    ]);
    expect((await invoke(acquire("jobs/tokens", null), via)).status).toBe(401);
    expect((await invoke(acquire("jobs/tokens"), via)).status).toBe(200);
  });

  it("LEASEHOLD_INSECURE_NO_AUTH=1: no token needed, the line says why; with tokens it is refused", async () => {
    logs.length = 0;
    const via = await createHandler({ LEASEHOLD_STORE: dynamo(), LEASEHOLD_INSECURE_NO_AUTH: "1" }, { log });
    expect(logs[0]).toContain("auth: none, because of LEASEHOLD_INSECURE_NO_AUTH=1");
    expect((await invoke(acquire("jobs/insecure", null), via)).status).toBe(200);
    expect(
      await refusal({ LEASEHOLD_STORE: dynamo(), LEASEHOLD_TOKENS: tokens, LEASEHOLD_INSECURE_NO_AUTH: "1" }),
    ).toContain("LEASEHOLD_TOKENS: 1 token given together with LEASEHOLD_INSECURE_NO_AUTH=1");
  });

  it("LEASEHOLD_MAX_SKEW_MS: the bound the server applies; a bad value refuses to start", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 2) });
    const via = await createHandler(
      { LEASEHOLD_STORE: dynamo(), LEASEHOLD_TOKENS: tokens, LEASEHOLD_MAX_SKEW_MS: "5000" },
      { log, clock },
    );
    const put = (name: string, acquiredAt: number) =>
      invoke(
        event("http-api", "PUT", `/v1/leases/${encodeURIComponent(name)}`, {
          body: { holder: "h", term: 1, leaseMs: 5000, metadata: {}, writeId: "w1", acquiredAt },
          headers: { "if-none-match": "*", "leasehold-instance": TEST_INSTANCE },
        }),
        via,
      );
    expect((await put("jobs/skew-ok", clock.wallNow() + 5000)).status).toBe(201);
    expect(await put("jobs/skew-far", clock.wallNow() + 5001)).toMatchObject({
      status: 400,
      body: { errors: [{ path: "acquiredAt" }] },
    });
    expect(
      await refusal({ LEASEHOLD_STORE: dynamo(), LEASEHOLD_TOKENS: tokens, LEASEHOLD_MAX_SKEW_MS: "abc" }),
    ).toContain('LEASEHOLD_MAX_SKEW_MS: expected a whole number of milliseconds 0-60000, got "abc"');
  });

  it.each([
    ["PORT", "8080", "a Lambda function does not listen on a port"],
    ["HOST", "0.0.0.0", "a Lambda function does not listen on a port"],
    ["LEASEHOLD_DB", "/tmp/leases.db", "it names a SQLite file, and each Lambda instance would have its own file"],
    ["LEASEHOLD_WATCH_STREAMS", "10", "a Lambda instance serves one request at a time"],
    ["LEASEHOLD_WATCH_STREAMS_PER_TOKEN", "10", "a Lambda instance serves one request at a time"],
  ])("%s is refused, saying why", async (name, value, why) => {
    const message = await refusal({ LEASEHOLD_STORE: dynamo(), LEASEHOLD_TOKENS: tokens, [name]: value });
    expect(message).toContain(`${name}: not read by the Lambda handler: ${why}`);
  });

  it("LEASEHOLD_WATCH_POLL_MS and LEASEHOLD_HEARTBEAT_MS: read for the streaming handler's watch streams", async () => {
    logs.length = 0;
    await createHandler(
      {
        LEASEHOLD_STORE: dynamo(),
        LEASEHOLD_TOKENS: tokens,
        LEASEHOLD_WATCH_POLL_MS: "250",
        LEASEHOLD_HEARTBEAT_MS: "5000",
      },
      { log },
    );
    expect(logs[0]).toContain("maxSkewMs 1000, watchPollMs 250, heartbeatMs 5000");
    expect(
      await refusal({ LEASEHOLD_STORE: dynamo(), LEASEHOLD_TOKENS: tokens, LEASEHOLD_WATCH_POLL_MS: "5" }),
    ).toContain("LEASEHOLD_WATCH_POLL_MS: expected a whole number of milliseconds 10-3600000");
  });

  it("the buffered handler answers a watch 501 saying how to enable streaming (GET and HEAD); outside Lambda the streaming handler says where it runs", async () => {
    const via = await createHandler({ LEASEHOLD_STORE: dynamo(), LEASEHOLD_TOKENS: tokens }, { log });
    for (const method of ["GET", "HEAD"]) {
      const res = await invoke(event("function-url", method, `/v1/leases/${encodeURIComponent("jobs/w")}/watch`), via);
      expect(res.status).toBe(501);
      expect(res.type).toBe("application/problem+json");
      if (method === "GET") {
        expect(res.body).toMatchObject({ type: "urn:leasehold:problem:streaming-unavailable", detail: STREAMING_HINT });
        expect(STREAMING_HINT).toContain("InvokeMode RESPONSE_STREAM and the handler index.streamingHandler");
      }
    }
    // Without a token the route says 401 first: nothing about the deployment leaks.
    expect((await invoke(event("function-url", "GET", "/v1/leases/x/watch", { token: null }), via)).status).toBe(401);
    await expect(createStreamingHandler({ LEASEHOLD_STORE: dynamo(), LEASEHOLD_TOKENS: tokens })).rejects.toThrow(
      "streamingHandler runs only in the AWS Lambda Node.js runtime (its awslambda global is missing)",
    );
  });

  it.each(["AWS_REGION", "AWS_DEFAULT_REGION"])("%s: the DynamoDB region when the URL has none", async (name) => {
    const url = `dynamodb://${table}?endpoint=${encodeURIComponent(testEndpoint())}`;
    const via = await createHandler({ LEASEHOLD_STORE: url, LEASEHOLD_TOKENS: tokens, [name]: "us-east-1" }, { log });
    expect((await invoke(acquire(`jobs/${name.toLowerCase()}`), via)).status).toBe(200);
    expect(await refusal({ LEASEHOLD_STORE: url, LEASEHOLD_TOKENS: tokens })).toContain(
      "LEASEHOLD_STORE: dynamodb:// needs ?region=...",
    );
  });

  it("LEASEHOLD_TOKEN: the token sent to an http(s):// store", async () => {
    const backing = new MemoryStore();
    const api = await serve({ store: backing, port: 0, tokens: JSON.parse(tokens) });
    try {
      const via = await createHandler(
        { LEASEHOLD_STORE: `${api.url}/`, LEASEHOLD_TOKEN: TOKEN, LEASEHOLD_TOKENS: tokens },
        { log },
      );
      expect((await invoke(acquire("jobs/proxied"), via)).status).toBe(200);
      expect((await backing.get("jobs/proxied"))?.record).toMatchObject({ holder: "fn-a" });
    } finally {
      await api.close();
    }
  });

  it("GOOGLE_CLOUD_PROJECT: the GCS project when the URL has none", async () => {
    const endpoint = process.env.GCS_ENDPOINT!;
    const bucket = `lambda-env-${Date.now().toString(36)}`;
    await new Storage({ apiEndpoint: endpoint, projectId: "leasehold-test" }).createBucket(bucket);
    const via = await createHandler(
      {
        LEASEHOLD_STORE: `gcs://${bucket}/leases/?endpoint=${endpoint}`,
        GOOGLE_CLOUD_PROJECT: "leasehold-test",
        LEASEHOLD_TOKENS: tokens,
      },
      { log },
    );
    expect((await invoke(acquire("jobs/gcs"), via)).status).toBe(200);
  });
});
