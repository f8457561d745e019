/**
 * Node side of the workerd tests: starts dynalite on 127.0.0.1 and creates one lease table, and
 * versitygw with one bucket, then hands them to the Worker as bindings (vitest `provide` ->
 * cloudflareTest's `inject`).
 */
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import type { TestProject } from "vitest/node";
import { S3_TEST_CREDENTIALS, S3_TEST_REGION, startVersitygw } from "../servers/versitygw.server.js";
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
  const admin = new S3Client({
    endpoint: s3.endpoint,
    region: S3_TEST_REGION,
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
  });
  try {
    const bucket = `workers-${Date.now().toString(36)}`;
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    project.provide("s3Endpoint", s3.endpoint);
    project.provide("s3Bucket", bucket);
  } finally {
    admin.destroy();
  }
  return async () => {
    await Promise.all([server.stop(), s3.stop()]);
  };
}
