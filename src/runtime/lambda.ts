/**
 * The API as an AWS Lambda handler (API Gateway HTTP API v2 or a Function URL, payload format
 * 2.0), via hono/aws-lambda. Configuration from the function's environment:
 *   LEASEHOLD_STORE   store URL, normally dynamodb://TABLE?region=REGION (required)
 *   LEASEHOLD_TOKENS  JSON array of scoped bearer tokens (required unless the next is set)
 *   LEASEHOLD_INSECURE_NO_AUTH=1  explicit opt-out, for a function behind IAM auth only
 *   LEASEHOLD_MAX_SKEW_MS  clock skew bound between instances (default 1000)
 * The store and app are built once per cold start and reused by warm invocations. Watch streams
 * need response streaming, which the buffered Lambda integration does not give: use the Node or
 * Workers runtime for /watch.
 */
import { handle } from "hono/aws-lambda";
import { createApp } from "../api/app.js";
import { type AuthConfig, parseTokens } from "../api/auth.js";
import { openStore } from "../open-store.js";

type Handler = ReturnType<typeof handle>;

export async function createHandler(env: Record<string, string | undefined>): Promise<Handler> {
  if (!env.LEASEHOLD_STORE) {
    throw new Error("LEASEHOLD_STORE is not set: expected e.g. dynamodb://leasehold-leases?region=eu-west-1");
  }
  const store = await openStore(env.LEASEHOLD_STORE, { env });
  let auth: AuthConfig;
  if (env.LEASEHOLD_TOKENS) auth = { tokens: parseTokens(env.LEASEHOLD_TOKENS) };
  else if (env.LEASEHOLD_INSECURE_NO_AUTH === "1") auth = { insecureNoAuth: true };
  else throw new Error("LEASEHOLD_TOKENS is not set (or set LEASEHOLD_INSECURE_NO_AUTH=1 behind IAM auth)");
  const maxSkewMs = env.LEASEHOLD_MAX_SKEW_MS === undefined ? undefined : Number(env.LEASEHOLD_MAX_SKEW_MS);
  return handle(createApp({ store, auth, ...(maxSkewMs === undefined ? {} : { maxSkewMs }) }));
}

let cold: Promise<Handler> | undefined;

export const handler: Handler = async (event, context) => {
  cold ??= createHandler(process.env).catch((error: unknown) => {
    cold = undefined; // a bad configuration is reported on every call, not cached as a broken handler
    throw error;
  });
  return (await cold)(event, context);
};
