/**
 * dynalite for tests and benchmarks: started in-process on 127.0.0.1 and a free port, plus an SDK
 * client with fixed fake credentials (no environment or ~/.aws lookups) and a lease table maker.
 */
import type { AddressInfo } from "node:net";
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
} from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";

// The SDK warns once per process that it will need Node 22 in 2027; known, and noise in test output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";

export interface RunningDynalite {
  endpoint: string;
  stop(): Promise<void>;
}

/** In memory unless `path` is given (LevelDB files there). */
export async function startDynalite(options: { path?: string } = {}): Promise<RunningDynalite> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ...options });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function dynamoClient(endpoint: string, config: DynamoDBClientConfig = {}): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "leasehold-test", secretAccessKey: "leasehold-test" },
    ...config,
  });
}

/** The endpoint test/servers/dynalite.server.ts started for this run. */
export function testEndpoint(): string {
  const endpoint = process.env.DYNAMODB_ENDPOINT;
  if (!endpoint) throw new Error("DYNAMODB_ENDPOINT is not set: run through vitest (test/servers/dynalite.server.ts)");
  return endpoint;
}

let tables = 0;

/**
 * Creates an on-demand table keyed by a string partition key, with a unique name (test files may
 * share a process), and returns once it is ACTIVE: dynalite answers ResourceNotFound until then.
 */
export async function createLeaseTable(client: DynamoDBClient, partitionKey = "pk"): Promise<string> {
  const unique = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}-${tables++}`;
  const table = `leasehold-${process.pid}-${unique}`;
  await client.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [{ AttributeName: partitionKey, AttributeType: "S" }],
      KeySchema: [{ AttributeName: partitionKey, KeyType: "HASH" }],
    }),
  );
  for (let i = 0; i < 500; i++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    if (Table?.TableStatus === "ACTIVE") return table;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error(`dynalite table ${table} did not become ACTIVE`);
}
