/**
 * The API as an AWS Lambda handler (API Gateway HTTP API v2 or a Function URL, payload format
 * 2.0), via hono/aws-lambda. Configuration from the function's environment, read by
 * src/runtime/config.ts like every entry's (README: "Server configuration"): LEASEHOLD_STORE
 * (required, a shared store: normally dynamodb://TABLE, region from Lambda's AWS_REGION),
 * LEASEHOLD_TOKENS or LEASEHOLD_INSECURE_NO_AUTH=1 (behind IAM auth only), LEASEHOLD_MAX_SKEW_MS.
 * PORT, HOST, LEASEHOLD_DB and the watch settings are refused here, with the reason.
 * The store and app are built once per cold start and reused by warm invocations; the start-up
 * line goes to the function's log. Watch streams need response streaming, which the buffered
 * Lambda integration does not give: use the Node or Workers runtime for /watch.
 */

import { handle } from "hono/aws-lambda";
import { createApp } from "../api/app.js";
import { byLevel, createLogger } from "../api/log.js";
import type { Clock } from "../clock.js";
import { openStore } from "../open-store.js";
import { authConfig, readServerConfig, startupLine } from "./config.js";

type Handler = ReturnType<typeof handle>;

export interface HandlerOptions {
  /** Where the start-up line and warnings go. Default: console.info (the function's log, level INFO). */
  log?: (line: string) => void;
  /** For tests. */
  clock?: Clock;
}

export async function createHandler(
  env: Record<string, string | undefined>,
  options: HandlerOptions = {},
): Promise<Handler> {
  const config = readServerConfig(env, "lambda");
  const logger = createLogger(config.logFormat, byLevel);
  const log = options.log ?? ((line: string) => logger.info(line));
  if (config.store.kind !== "url") throw new Error("the Lambda handler needs a store URL");
  for (const warning of config.warnings) log(`warning: ${warning}`);
  const store = await openStore(config.store.url, { env: config.storeEnv });
  const app = createApp({
    store,
    auth: authConfig(config.auth),
    ...config.app,
    console: config.console,
    log: logger,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  log(startupLine(config, `Lambda (${env.AWS_LAMBDA_FUNCTION_NAME ?? "function"})`));
  return handle(app);
}

let cold: Promise<Handler> | undefined;

export const handler: Handler = async (event, context) => {
  cold ??= createHandler(process.env).catch((error: unknown) => {
    cold = undefined; // a bad configuration is reported on every call, not cached as a broken handler
    throw error;
  });
  return (await cold)(event, context);
};
