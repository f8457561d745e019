/**
 * The Lambda handler with real event shapes (API Gateway HTTP API v2 and a Function URL, both
 * payload format 2.0) against dynalite, through the DynamoDB store chosen by LEASEHOLD_STORE.
 */
import type { LambdaContext as Context } from "hono/aws-lambda";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createHandler } from "../src/runtime/lambda.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";

const TOKEN = "lambda-token-0123456789abcdef";
let handler: Awaited<ReturnType<typeof createHandler>>;

beforeAll(async () => {
  // Lambda hands the SDK its role's credentials through the process environment.
  vi.stubEnv("AWS_ACCESS_KEY_ID", "leasehold-test");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "leasehold-test");
  const table = await createLeaseTable(dynamoClient(testEndpoint()));
  handler = await createHandler({
    LEASEHOLD_STORE: `dynamodb://${table}?region=us-east-1&endpoint=${encodeURIComponent(testEndpoint())}`,
    LEASEHOLD_TOKENS: JSON.stringify([{ token: TOKEN, prefixes: ["adapters/"], verbs: ["read", "write"] }]),
  });
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
  options: { body?: unknown; token?: string | null; rawQueryString?: string } = {},
) {
  const domainName =
    kind === "http-api"
      ? "r3pmxmplak.execute-api.us-east-1.amazonaws.com"
      : "abcdefghijklmnop.lambda-url.us-east-1.on.aws";
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
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

async function invoke(e: ReturnType<typeof event>) {
  const res = (await handler(e as never, context)) as {
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

describe("lambda configuration", () => {
  it("refuses to start without a store or without tokens, saying what to set", async () => {
    await expect(createHandler({})).rejects.toThrow(/LEASEHOLD_STORE is not set/);
    await expect(createHandler({ LEASEHOLD_STORE: "memory:" })).rejects.toThrow(/LEASEHOLD_TOKENS is not set/);
  });
});
