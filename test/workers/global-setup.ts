/**
 * Node side of the workerd tests: starts dynalite on 127.0.0.1 and creates one lease table, then
 * hands both to the Worker as bindings (vitest `provide` -> cloudflareTest's `inject`).
 */
import type { TestProject } from "vitest/node";
import { createLeaseTable, dynamoClient, startDynalite } from "../support/dynamo-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    dynamodbTable: string;
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
  return () => server.stop();
}
