/**
 * The API on Cloudflare Workers (wrangler.toml's `main`): the same `createApp` as on Node, built
 * once per isolate from the Worker's bindings, plus the `LeaseObject` Durable Object class.
 *
 * Bindings and secrets (nothing secret belongs in wrangler.toml):
 *   LEASES                      Durable Object namespace of `LeaseObject`: the default store.
 *   LEASEHOLD_STORE             unset: the Durable Object store; or
 *                               dynamodb://TABLE?region=R[&endpoint=URL][&pk=ATTR][&ttl=ATTR] for DynamoDB.
 *   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY [, AWS_SESSION_TOKEN]  secrets, DynamoDB only.
 *   AWS_REGION                  DynamoDB region when the URL has none.
 *   LEASEHOLD_TOKENS            secret: JSON array of scoped tokens (see src/api/auth.ts).
 *   LEASEHOLD_INSECURE_NO_AUTH  "1" turns auth off when no tokens are set. A Worker is public:
 *                               without tokens and without this, every request is refused (500).
 *   LEASEHOLD_MAX_SKEW_MS, LEASEHOLD_WATCH_POLL_MS, LEASEHOLD_HEARTBEAT_MS  createApp's options.
 * A configuration error is answered to every request as problem+json, never by serving insecurely.
 */
import { createApp } from "../api/app.js";
import { type AuthConfig, parseTokens } from "../api/auth.js";
import type { LeaseStore } from "../lease.js";
import { dynamoDbTableOptions, parseStoreUrl } from "../open-store.js";
import { DurableObjectStore, type LeaseNamespace } from "../stores/durable-object.js";

export { LeaseObject } from "../stores/durable-object.js";

export interface WorkerEnv {
  LEASES?: LeaseNamespace;
  LEASEHOLD_STORE?: string;
  LEASEHOLD_TOKENS?: string;
  LEASEHOLD_INSECURE_NO_AUTH?: string;
  LEASEHOLD_MAX_SKEW_MS?: string;
  LEASEHOLD_WATCH_POLL_MS?: string;
  LEASEHOLD_HEARTBEAT_MS?: string;
  AWS_ACCESS_KEY_ID?: string;
  AWS_SECRET_ACCESS_KEY?: string;
  AWS_SESSION_TOKEN?: string;
  AWS_REGION?: string;
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
    const auth = authFromEnv(env);
    const app = createApp({
      store: await storeFromEnv(env),
      auth,
      ...msOption("maxSkewMs", "LEASEHOLD_MAX_SKEW_MS", env.LEASEHOLD_MAX_SKEW_MS),
      ...msOption("watchPollMs", "LEASEHOLD_WATCH_POLL_MS", env.LEASEHOLD_WATCH_POLL_MS),
      ...msOption("heartbeatMs", "LEASEHOLD_HEARTBEAT_MS", env.LEASEHOLD_HEARTBEAT_MS),
    });
    return (request) => app.fetch(request);
  } catch (error) {
    const detail = `the leasehold Worker is misconfigured: ${(error as Error).message}`;
    const body = JSON.stringify({
      type: "urn:leasehold:problem:configuration",
      title: "Misconfigured",
      status: 500,
      detail,
    });
    return () => new Response(body, { status: 500, headers: { "content-type": "application/problem+json" } });
  }
}

function authFromEnv(env: WorkerEnv): AuthConfig {
  if (env.LEASEHOLD_TOKENS) return { tokens: parseTokens(env.LEASEHOLD_TOKENS) };
  if (env.LEASEHOLD_INSECURE_NO_AUTH === "1") return { insecureNoAuth: true };
  throw new Error("set the secret LEASEHOLD_TOKENS (or LEASEHOLD_INSECURE_NO_AUTH=1 for a throwaway test deployment)");
}

async function storeFromEnv(env: WorkerEnv): Promise<LeaseStore> {
  if (!env.LEASEHOLD_STORE) {
    if (!env.LEASES) throw new Error("bind the LeaseObject Durable Object as LEASES (see wrangler.toml)");
    return new DurableObjectStore({ namespace: env.LEASES });
  }
  const spec = parseStoreUrl(env.LEASEHOLD_STORE);
  if (spec.kind !== "dynamodb") {
    throw new Error(
      `LEASEHOLD_STORE: the ${spec.kind} store does not run on Workers; unset it (Durable Objects) or use dynamodb://`,
    );
  }
  if (!env.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY) {
    throw new Error("dynamodb:// needs the secrets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  const region = spec.region ?? env.AWS_REGION;
  if (!region) throw new Error("dynamodb:// needs ?region=... or the variable AWS_REGION");
  // Loaded only for this branch, so isolates on the Durable Object store never evaluate the AWS SDK.
  const [{ DynamoDBClient }, { DynamoDbStore }] = await Promise.all([
    import("@aws-sdk/client-dynamodb"),
    import("../stores/dynamodb.js"),
  ]);
  const client = new DynamoDBClient({
    region,
    ...(spec.endpoint === undefined ? {} : { endpoint: spec.endpoint }),
    credentials: {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    },
  });
  return new DynamoDbStore({ client, ...dynamoDbTableOptions(spec) });
}

function msOption<K extends string>(key: K, variable: string, value: string | undefined): Partial<Record<K, number>> {
  if (value === undefined || value === "") return {};
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${variable}: expected whole milliseconds, got "${value}"`);
  return { [key]: n } as Partial<Record<K, number>>;
}
