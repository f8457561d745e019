/**
 * The store modules the Worker bundles (./worker.ts), each imported by a literal specifier so that
 * wrangler's bundler follows it (openStore's own import is computed, which bundlers leave out), and
 * each evaluated only when it is the configured one: isolates on Durable Objects never load the AWS
 * SDK. Exactly the backends whose declaration says they run on Workers (test/config.test.ts checks).
 */
import type { StoreKind } from "../open-store.js";

export const WORKER_STORES: Partial<Record<StoreKind, () => Promise<unknown>>> = {
  "durable-object": () => import("../backends/durable-object/store.js"),
  dynamodb: () => import("../backends/dynamodb/store.js"),
};
