import type { TestProject } from "vitest/node";
import { createTestBucket, startVersitygw } from "../servers/versitygw.server.js";
import { createLeaseTable, dynamoClient, startDynalite } from "../support/dynamo-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    dynamodbTable: string;
    s3Endpoint: string;
    s3Bucket: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startDynalite();
  const client = dynamoClient(server.endpoint);
  try {
    project.provide("dynamodbEndpoint", server.endpoint);
    project.provide("dynamodbTable", await createLeaseTable(client));
  } finally {
    client.destroy();
  }
  // versitygw, for the S3 store from inside workerd (test/workers/s3.test.ts).
  const s3 = await startVersitygw();
  project.provide("s3Endpoint", s3.endpoint);
  project.provide("s3Bucket", await createTestBucket(s3.endpoint, "workers"));
  return async () => {
    await Promise.all([server.stop(), s3.stop()]);
  };
}
