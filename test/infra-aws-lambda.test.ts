/**
 * The code infra/aws deploys, end to end without AWS: bundle src/runtime/lambda.ts exactly as
 * `cdk synth` does (infra/aws/lib/bundle.ts), load the bundle's handler, and send it Function URL
 * events (payload format 2.0) with its store pointed at dynalite. The handler runs in a plain Node
 * process, as on Lambda (vitest's module runner would resolve the bundle's runtime imports its own
 * way). Checks that the bundle resolves openStore's runtime imports (the store module and the SDK)
 * and serves the API.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleLambda } from "../infra/aws/lib/bundle.js";
import { DynamoDbStore } from "../src/backends/dynamodb/store.js";
import { S3Store } from "../src/backends/s3/store.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { createTestBucket, S3_TEST_CREDENTIALS, S3_TEST_REGION } from "./servers/versitygw.server.js";
import { withInstance } from "./support/api-server.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";

interface Reply {
  statusCode: number;
  body?: string;
}

const dir = mkdtempSync(join(tmpdir(), "leasehold-lambda-"));
const client = dynamoClient(testEndpoint());
const TOKEN = "smoke-token-0123456789abcdef";
let table = "";
/** What the handler logged during the last invoke(). */
let logged = "";

// Invokes the bundled handler once per event, in order, in one cold-started Node process.
const DRIVER = `
import { handler } from "./index.js";
const events = JSON.parse(process.argv[2]);
const replies = [];
for (const e of events) replies.push(await handler(e, {}));
// After whatever the handler logged (its start-up line goes to stdout, as console.info does on Lambda).
process.stdout.write("\\nREPLIES " + JSON.stringify(replies));
`;

beforeAll(async () => {
  table = await createLeaseTable(client);
  await bundleLambda(dir);
  writeFileSync(join(dir, "driver.js"), DRIVER);
});
afterAll(() => {
  client.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function invoke(...events: unknown[]): Promise<Reply[]> {
  return invokeOn(`dynamodb://${table}?region=us-east-1&endpoint=${encodeURIComponent(testEndpoint())}`, events);
}

async function invokeOn(store: string, events: unknown[]): Promise<Reply[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [join(dir, "driver.js"), JSON.stringify(events)], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "",
      LEASEHOLD_STORE: store,
      LEASEHOLD_TOKENS: JSON.stringify([{ token: TOKEN, prefixes: [""], verbs: ["read", "write"] }]),
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "leasehold-test",
      AWS_SECRET_ACCESS_KEY: "leasehold-test",
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    },
  });
  const at = stdout.lastIndexOf("\nREPLIES ");
  logged = stdout.slice(0, at);
  return JSON.parse(stdout.slice(at + "\nREPLIES ".length)) as Reply[];
}

function event(method: string, path: string, body?: unknown, token = TOKEN) {
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: path,
    rawQueryString: "",
    headers: {
      host: "abc.lambda-url.us-east-1.on.aws",
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    requestContext: {
      accountId: "anonymous",
      apiId: "abc",
      domainName: "abc.lambda-url.us-east-1.on.aws",
      domainPrefix: "abc",
      http: { method, path, protocol: "HTTP/1.1", sourceIp: "127.0.0.1", userAgent: "leasehold-test" },
      requestId: "req",
      routeKey: "$default",
      stage: "$default",
      time: "02/Dec/2026:00:00:00 +0000",
      timeEpoch: Date.now(),
    },
    isBase64Encoded: false,
    ...(body === undefined ? {} : { body: JSON.stringify(withInstance(path, body)) }),
  };
}

describe("infra/aws: the bundled Lambda handler against dynalite", () => {
  it("acquires, reads and refuses a second holder, writing through the DynamoDB store", async () => {
    const name = uniqueName("smoke").replace("/", "-");
    const path = `/v1/leases/${encodeURIComponent(name)}`;
    const [acquired, read, taken] = await invoke(
      event("POST", `${path}/acquire`, { holder: "a", leaseMs: 15_000 }),
      event("GET", path),
      event("POST", `${path}/acquire`, { holder: "b", leaseMs: 15_000 }),
    );
    expect(acquired?.statusCode).toBe(200);
    expect(JSON.parse(acquired?.body ?? "{}")).toMatchObject({ leader: true, lease: { holder: "a", term: 1 } });
    expect(read?.statusCode).toBe(200);
    expect(read?.body).toContain('"holder":"a"');
    expect(taken?.statusCode).toBe(409);
    expect(logged).toContain(
      `leasehold: API on Lambda (function, buffered, no watch streams); store dynamodb://${table}?region=us-east-1`,
    );
    expect(logged).toContain("auth: 1 token (#1: read+write on all leases); maxSkewMs 1000");
    // The item is where the library's own store finds it.
    expect((await new DynamoDbStore({ client, table }).get(name))?.record).toMatchObject({ holder: "a", term: 1 });
  });

  it('serves the S3 store when LEASEHOLD_STORE is an s3:// URL (the stack\'s store: "s3"), on versitygw', async () => {
    const endpoint = process.env.S3_ENDPOINT;
    if (!endpoint) throw new Error("S3_ENDPOINT is not set: test/servers/versitygw.server.ts should have started");
    const bucket = await createTestBucket(endpoint, "lambda");
    const name = uniqueName("smoke").replace("/", "-");
    const path = `/v1/leases/${encodeURIComponent(name)}`;
    // The bundle's S3 client takes its credentials from the environment, as on Lambda (the role's keys).
    const [acquired, taken] = await invokeOn(
      `s3://${bucket}/leases/?endpoint=${encodeURIComponent(endpoint)}&pathStyle=true`,
      [
        event("POST", `${path}/acquire`, { holder: "a", leaseMs: 15_000 }),
        event("POST", `${path}/acquire`, { holder: "b", leaseMs: 15_000 }),
      ],
    );
    expect(acquired?.statusCode).toBe(200);
    expect(taken?.statusCode).toBe(409);
    const store = new S3Store({
      bucket,
      endpoint,
      region: S3_TEST_REGION,
      forcePathStyle: true,
      credentials: S3_TEST_CREDENTIALS,
    });
    expect((await store.get(name))?.record).toMatchObject({ holder: "a", term: 1 });
    await store.close();
  });

  it("rejects a request without a valid token", async () => {
    const [denied] = await invoke(event("GET", "/v1/leases/x", undefined, "wrong-token-0123456789"));
    expect(denied?.statusCode).toBe(401);
  });
});
