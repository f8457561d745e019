/**
 * The API as an AWS Lambda function (API Gateway HTTP API v2 or a Function URL, payload format
 * 2.0), via hono/aws-lambda. Two handlers, one per way of invoking it:
 * - `streamingHandler`: response streaming, for a Function URL with InvokeMode RESPONSE_STREAM
 *   (what infra/aws deploys). The Lambda Node.js runtime's `awslambda.streamifyResponse` marks it,
 *   and hono's `streamHandle` writes each response through `awslambda.HttpResponseStream` as it
 *   is produced, so watch streams deliver every event as it happens. A stream ends itself with an
 *   "end" event STREAM_MARGIN_MS before the invocation's timeout (`getRemainingTimeInMillis`),
 *   and the client resumes at once with Last-Event-ID, missing nothing.
 * - `handler`: buffered, for API Gateway's HTTP API and a Function URL in BUFFERED mode. Every
 *   route but /watch, which answers 501 `streaming-unavailable` saying how to enable streaming (a
 *   buffered stream would reach its client only when the invocation times out).
 * Configuration from the function's environment, read by src/api/config/policy.ts like every entry's
 * (README: "Server configuration"): LEASEHOLD_STORE (required, a shared store: normally
 * dynamodb://TABLE, region from Lambda's AWS_REGION), LEASEHOLD_TOKENS or
 * LEASEHOLD_INSECURE_NO_AUTH=1 (behind IAM auth only), LEASEHOLD_MAX_SKEW_MS, and for streams
 * LEASEHOLD_WATCH_POLL_MS and LEASEHOLD_HEARTBEAT_MS. PORT, HOST, LEASEHOLD_DB and the per-instance
 * stream bounds are refused here, with the reason. The store and app are built once per cold start
 * and reused by warm invocations; the start-up line goes to the function's log.
 */

import { handle, type LambdaContext, streamHandle } from "hono/aws-lambda";
import { type AppOptions, createApp } from "../api/app.js";
import { authConfig } from "../api/config/auth-mode.js";
import { readServerConfig } from "../api/config/policy.js";
import { startupLine } from "../api/config/startup-line.js";
import { byLevel, createLogger } from "../api/log.js";
import type { Clock } from "../clock.js";
import { openStore } from "../open-store.js";

type Handler = ReturnType<typeof handle>;
/** A streaming handler as the Lambda Node.js runtime calls it (after `awslambda.streamifyResponse`). */
export type StreamingHandler = (event: unknown, responseStream: unknown, context: LambdaContext) => Promise<void>;

/** A stream ends this long before the invocation's timeout, so it closes cleanly instead of being cut. */
export const STREAM_MARGIN_MS = 2000;

/** The 501 detail of the buffered handler's watch route. */
export const STREAMING_HINT =
  "this function answers buffered, so a watch stream could reach you only when the invocation ends: invoke it through a Function URL with InvokeMode RESPONSE_STREAM and the handler index.streamingHandler (infra/aws deploys it so), or serve /watch from the Node or Workers runtime";

export interface HandlerOptions {
  /** Where the start-up line and warnings go. Default: console.info (the function's log, level INFO). */
  log?: (line: string) => void;
  /** For tests. */
  clock?: Clock;
}

/** The buffered handler (API Gateway HTTP API, Function URL in BUFFERED mode). */
export async function createHandler(
  env: Record<string, string | undefined>,
  options: HandlerOptions = {},
): Promise<Handler> {
  return handle(await lambdaApp(env, options, { unavailable: STREAMING_HINT }));
}

/**
 * The streaming handler (Function URL with InvokeMode RESPONSE_STREAM). Needs the Lambda Node.js
 * runtime's `awslambda` global (its `HttpResponseStream` writes each response).
 */
export async function createStreamingHandler(
  env: Record<string, string | undefined>,
  options: HandlerOptions = {},
): Promise<StreamingHandler> {
  runtimeGlobal();
  const app = await lambdaApp(env, options, {
    // hono's streamHandle passes the invocation's context as c.env.context.
    timeLeft: (c) => (c.env as { context: LambdaContext }).context.getRemainingTimeInMillis() - STREAM_MARGIN_MS,
  });
  return streamHandle(app) as unknown as StreamingHandler;
}

async function lambdaApp(
  env: Record<string, string | undefined>,
  options: HandlerOptions,
  streams: NonNullable<AppOptions["streams"]>,
) {
  const config = readServerConfig(env, "lambda");
  const logger = createLogger(config.logFormat, byLevel);
  const log = options.log ?? ((line: string) => logger.info(line));
  for (const warning of config.warnings) log(`warning: ${warning}`);
  const store = await openStore(config.store.url, { env: config.storeEnv });
  const app = createApp({
    store,
    auth: authConfig(config.auth),
    ...config.app,
    streams,
    console: config.console,
    log: logger,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const mode = "unavailable" in streams ? "buffered, no watch streams" : "streaming";
  log(startupLine(config, `Lambda (${env.AWS_LAMBDA_FUNCTION_NAME ?? "function"}, ${mode})`));
  return app;
}

/** What the Lambda Node.js runtime puts on globalThis for streaming handlers. */
interface LambdaGlobal {
  streamifyResponse<F>(handler: F): F;
}

/**
 * The runtime's `awslambda`, when this is the Lambda Node.js runtime. Not merely the global's
 * presence: the AWS SDK puts an `awslambda` object (with its InvokeStore) on globalThis anywhere.
 */
function lambdaGlobal(): LambdaGlobal | undefined {
  const lambda = (globalThis as { awslambda?: Partial<LambdaGlobal> }).awslambda;
  return typeof lambda?.streamifyResponse === "function" ? (lambda as LambdaGlobal) : undefined;
}

function runtimeGlobal(): LambdaGlobal {
  const lambda = lambdaGlobal();
  if (!lambda) {
    throw new Error(
      "streamingHandler runs only in the AWS Lambda Node.js runtime (its awslambda global is missing): use handler elsewhere",
    );
  }
  return lambda;
}

/** One cold start per handler, retried on the next call when it failed (a bad configuration is reported on every call). */
function coldStart<T>(create: () => Promise<T>): () => Promise<T> {
  let cold: Promise<T> | undefined;
  return () =>
    (cold ??= create().catch((error: unknown) => {
      cold = undefined;
      throw error;
    }));
}

const buffered = coldStart(() => createHandler(process.env));
const streaming = coldStart(() => createStreamingHandler(process.env));

export const handler: Handler = async (event, context) => (await buffered())(event, context);

/**
 * Marked for streaming at load, as the runtime requires; outside the Lambda runtime (no
 * `awslambda` global) it fails each call saying so.
 */
const streamingEntry: StreamingHandler = async (event, responseStream, context) =>
  (await streaming())(event, responseStream, context);
export const streamingHandler: StreamingHandler = lambdaGlobal()?.streamifyResponse(streamingEntry) ?? streamingEntry;
