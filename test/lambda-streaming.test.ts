/**
 * Watch streams on AWS Lambda, as close to the real runtime as this machine allows: the code
 * infra/aws deploys (bundled as `cdk synth` bundles it) runs under the real Lambda Node.js runtime
 * interface client (aws-lambda-ric, test/support/lambda-ric.ts) as `index.streamingHandler`,
 * driven through the Runtime API by test/support/lambda-runtime-api.ts in the role of the Lambda
 * service and the Function URL (RESPONSE_STREAM): the function's answer arrives chunk by chunk, a
 * JSON prelude and 8 NUL bytes, then the Server-Sent Events. Leases live in dynalite.
 *
 * The AWS Lambda Runtime Interface Emulator cannot stream responses (its issue #175), which is why
 * the Runtime API is this test's own. Shown here: each event reaches the client while the
 * invocation is still running (not when it ends); the stream ends itself with an "end" event
 * before the invocation's deadline; the next invocation resumed with Last-Event-ID delivers the
 * change made in between.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleLambda } from "../infra/aws/lib/bundle.js";
import { DynamoDbStore } from "../src/backends/dynamodb/store.js";
import { readSse, type SseMessage } from "../src/http/sse.js";
import type { Stored } from "../src/lease.js";
import { makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";
import { installLambdaRic } from "./support/lambda-ric.js";
import { LambdaRuntimeApi } from "./support/lambda-runtime-api.js";

const TOKEN = "stream-token-0123456789abcdef";
const dir = mkdtempSync(join(tmpdir(), "leasehold-lambda-stream-"));
const client = dynamoClient(testEndpoint());
let table = "";
let api: LambdaRuntimeApi;
let runtime: ChildProcess;
let output = "";

beforeAll(async () => {
  const [ric] = await Promise.all([installLambdaRic(), bundleLambda(dir)]);
  table = await createLeaseTable(client);
  api = await LambdaRuntimeApi.start();
  runtime = spawn(process.execPath, [ric, "index.streamingHandler"], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "",
      // What Lambda sets for a function's runtime.
      AWS_LAMBDA_RUNTIME_API: api.address,
      LAMBDA_TASK_ROOT: dir,
      _HANDLER: "index.streamingHandler",
      AWS_LAMBDA_FUNCTION_NAME: "leasehold-api",
      AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "256",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "leasehold-test",
      AWS_SECRET_ACCESS_KEY: "leasehold-test",
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
      // The function's configuration (as infra/aws sets it, with dynalite for DynamoDB).
      LEASEHOLD_STORE: `dynamodb://${table}?region=us-east-1&endpoint=${encodeURIComponent(testEndpoint())}`,
      LEASEHOLD_TOKENS: JSON.stringify([{ token: TOKEN, prefixes: [""], verbs: ["read"] }]),
      LEASEHOLD_WATCH_POLL_MS: "100",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  runtime.stdout?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  runtime.stderr?.on("data", (d: Buffer) => {
    output += d.toString();
  });
}, 600_000);

afterAll(async () => {
  runtime?.kill("SIGKILL");
  await api?.close();
  client.destroy();
  rmSync(dir, { recursive: true, force: true });
});

function watchEvent(name: string, headers: Record<string, string> = {}) {
  const rawPath = `/v1/leases/${encodeURIComponent(name)}/watch`;
  const host = "abcdefghijklmnop.lambda-url.us-east-1.on.aws";
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath,
    rawQueryString: "",
    headers: { host, accept: "text/event-stream", authorization: `Bearer ${TOKEN}`, ...headers },
    requestContext: {
      accountId: "anonymous",
      apiId: "abcdefghijklmnop",
      domainName: host,
      domainPrefix: "abcdefghijklmnop",
      http: { method: "GET", path: rawPath, protocol: "HTTP/1.1", sourceIp: "203.0.113.7", userAgent: "leasehold" },
      requestId: "stream-test",
      routeKey: "$default",
      stage: "$default",
      time: "03/Dec/2026:12:00:00 +0000",
      timeEpoch: Date.now(),
    },
    isBase64Encoded: false,
  };
}

/** The next message of a stream, with whether the invocation had already finished when it arrived. */
async function next(messages: AsyncIterator<SseMessage>, finished: () => boolean) {
  const { value, done } = await messages.next();
  if (done) throw new Error(`the stream ended early; runtime output:\n${output}`);
  return { event: value.event, id: value.id, data: JSON.parse(value.data), invocationOver: finished() };
}

describe("lambda: watch streams through the real Node.js runtime (response streaming)", () => {
  it("delivers each event while the invocation runs, ends before its deadline, and resumes with Last-Event-ID", async () => {
    const store = new DynamoDbStore({ client, table });
    const name = uniqueName("lambda-stream");
    const held = await store.put(makeRecord(name, { holder: "a", leaseMs: 60_000, renewedAt: Date.now() }), null);

    const first = api.invoke(watchEvent(name), 8000);
    const prelude = await first.prelude;
    expect(first.mode).toBe("streaming");
    expect(prelude.statusCode).toBe(200);
    expect(prelude.headers["content-type"]).toBe("text/event-stream");
    const messages = readSse(first.body)[Symbol.asyncIterator]();
    const over = () => first.done;

    expect(await next(messages, over)).toMatchObject({
      event: "lease",
      id: held.revision,
      data: { free: false, lease: { holder: "a" } },
      invocationOver: false,
    });
    // A release written elsewhere (another instance, another replica) reaches this stream at once.
    const released: Stored = await store.put(
      makeRecord(name, { holder: null, term: 1, renewedAt: Date.now() }),
      held.revision,
    );
    expect(await next(messages, over)).toMatchObject({
      event: "lease",
      id: released.revision,
      data: { free: true, lease: { holder: null } },
      invocationOver: false,
    });
    // Before the deadline the function ends the stream itself and the invocation completes cleanly.
    expect(await next(messages, over)).toMatchObject({ event: "end", invocationOver: false });
    await first.finished;
    expect(first.error).toBeUndefined();
    expect(first.trailers).toEqual({});

    // Taken while nobody watched: the next invocation, resumed from the last event, delivers it first.
    const taken = await store.put(
      makeRecord(name, { holder: "b", term: 2, leaseMs: 60_000, renewedAt: Date.now() }),
      released.revision,
    );
    const second = api.invoke(watchEvent(name, { "last-event-id": released.revision }), 60_000);
    const resumed = readSse(second.body)[Symbol.asyncIterator]();
    expect(await next(resumed, () => second.done)).toMatchObject({
      event: "lease",
      id: taken.revision,
      data: { free: false, lease: { holder: "b", term: 2 } },
      invocationOver: false,
    });
    expect(api.initErrors).toEqual([]);
    expect(output).toContain("API on Lambda (leasehold-api, streaming)");
  });
});
