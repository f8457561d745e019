/**
 * The API on Cloudflare Workers (wrangler.toml's `main`): the same `createApp` as on Node, built
 * once per isolate from the Worker's bindings, plus the `LeaseObject` Durable Object class.
 *
 * Bindings and secrets (nothing secret belongs in wrangler.toml), read by src/api/config/policy.ts
 * like every entry's (README: "Server configuration"; docs/workers.md):
 *   LEASES                      Durable Object namespace of `LeaseObject`: the default store.
 *   LEASEHOLD_STORE             unset: durable-object:LEASES; durable-object:BINDING for another binding of
 *                               `LeaseObject`; or dynamodb://TABLE?region=R... for DynamoDB, with the secrets
 *                               AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY [, AWS_SESSION_TOKEN] and AWS_REGION
 *                               (or AWS_DEFAULT_REGION) when the URL has no region.
 *   LEASEHOLD_TOKENS            secret: JSON array of scoped tokens (see src/api/auth.ts).
 *   LEASEHOLD_INSECURE_NO_AUTH  "1" turns auth off (refused together with tokens). A Worker is public:
 *                               without either, every request is refused (500).
 *   LEASEHOLD_MAX_SKEW_MS, LEASEHOLD_WATCH_POLL_MS, LEASEHOLD_HEARTBEAT_MS  createApp's options.
 *   LEASEHOLD_CONSOLE, LEASEHOLD_HISTORY_TERMS, LEASEHOLD_HISTORY_LEASES  the console at /ui (docs/console.md).
 * PORT, HOST, LEASEHOLD_DB and LEASEHOLD_TOKEN are refused here, with the reason. A configuration
 * error is answered to every request as problem+json (and logged), never by serving insecurely.
 */

import { createApp } from "../api/app.js";
import { authConfig } from "../api/config/auth-mode.js";
import { readServerConfig, type ServerConfig } from "../api/config/policy.js";
import { startupLine } from "../api/config/startup-line.js";
import { byLevel, createLogger } from "../api/log.js";
import { ProblemError, problemAnswer } from "../api/problems.js";
import type { LeaseNamespace } from "../backends/durable-object/wire.js";
import type { LeaseStore } from "../lease.js";
import { openStore } from "../open-store.js";
import { WORKER_STORES } from "./worker-stores.js";

export { LeaseObject } from "../backends/durable-object/object.js";

export interface WorkerEnv {
  LEASES?: LeaseNamespace;
  LEASEHOLD_STORE?: string;
  LEASEHOLD_TOKENS?: string;
  LEASEHOLD_INSECURE_NO_AUTH?: string;
  LEASEHOLD_MAX_SKEW_MS?: string;
  LEASEHOLD_WATCH_POLL_MS?: string;
  LEASEHOLD_HEARTBEAT_MS?: string;
  LEASEHOLD_STORE_TIMEOUT_MS?: string;
  LEASEHOLD_CONSOLE?: string;
  LEASEHOLD_HISTORY_TERMS?: string;
  LEASEHOLD_HISTORY_LEASES?: string;
  AWS_ACCESS_KEY_ID?: string;
  AWS_SECRET_ACCESS_KEY?: string;
  AWS_SESSION_TOKEN?: string;
  AWS_REGION?: string;
  AWS_DEFAULT_REGION?: string;
}

type Handler = (request: Request) => Response | Promise<Response>;

// One app per env object (in practice one per isolate): its watch hub and metrics live as long
// as the isolate, and config errors are computed once.
const handlers = new WeakMap<object, Promise<Handler>>();

export default {
  async fetch(request: Request, env: WorkerEnv): Promise<Response> {
    let handler = handlers.get(env);
    if (!handler) {
      handler = buildHandler(env);
      handlers.set(env, handler);
    }
    return (await handler)(request);
  },
};

async function buildHandler(env: WorkerEnv): Promise<Handler> {
  try {
    const config = readServerConfig(env as Record<string, unknown>, "worker");
    const log = createLogger(config.logFormat, byLevel);
    for (const warning of config.warnings) log.info(`warning: ${warning}`);
    const app = createApp({
      store: await storeOf(config, env),
      auth: authConfig(config.auth),
      ...config.app,
      console: config.console,
      log,
    });
    log.info(startupLine(config, "Cloudflare Workers"));
    return (request) => app.fetch(request);
  } catch (error) {
    const detail = `the leasehold Worker is misconfigured: ${(error as Error).message}`;
    console.error(`leasehold: ${detail}`);
    const { status, headers, body } = problemAnswer(new ProblemError("configuration", detail));
    return () => new Response(body, { status, headers });
  }
}

async function storeOf(config: ServerConfig, env: WorkerEnv): Promise<LeaseStore> {
  const { url, spec } = config.store;
  const load = WORKER_STORES[spec.kind];
  if (load === undefined) throw new Error(`the Worker does not bundle the ${spec.kind} store`);
  // A Durable Object store's client is its namespace binding.
  const client = spec.kind === "durable-object" ? (env as Record<string, unknown>)[spec.binding] : undefined;
  if (spec.kind === "durable-object" && client === undefined) {
    throw new Error(`bind the LeaseObject Durable Object as ${spec.binding} (see wrangler.toml)`);
  }
  return openStore(url, { env: config.storeEnv, module: await load(), ...(client === undefined ? {} : { client }) });
}
