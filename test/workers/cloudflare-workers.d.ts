/**
 * The parts of workerd's `cloudflare:workers` module these tests use (no @cloudflare/workers-types
 * in this project). `env` is the test Worker's bindings: wrangler.toml plus vitest.config.ts.
 */
declare module "cloudflare:workers" {
  import type { LeaseNamespace } from "../../src/backends/durable-object/store.js";
  import type { WorkerEnv } from "../../src/runtime/worker.js";

  export const env: WorkerEnv & {
    LEASES: LeaseNamespace;
    DYNAMODB_ENDPOINT: string;
    DYNAMODB_TABLE: string;
    S3_ENDPOINT: string;
    S3_BUCKET: string;
  };
  /** The main module's handlers, called through the runtime like a real request. */
  export const exports: { default: { fetch(request: Request): Promise<Response> } };
}

/** The pool's test helpers used here (@cloudflare/vitest-pool-workers). */
declare module "cloudflare:test" {
  /** Resets every Durable Object instance (as a crash or code update would); storage is kept. */
  export function abortAllDurableObjects(): Promise<void>;
}
