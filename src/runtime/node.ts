/**
 * The API on Node (`npm start`, `leasehold serve`). Configuration from the environment:
 *   PORT (8787), HOST (127.0.0.1), LEASEHOLD_STORE (a store URL; default the embedded SQLite
 *   file LEASEHOLD_DB or ./data/leasehold.db), LEASEHOLD_TOKENS (JSON array of scoped tokens),
 *   LEASEHOLD_INSECURE_NO_AUTH=1, LEASEHOLD_MAX_SKEW_MS (1000).
 * Without tokens, auth is off only when bound to loopback; elsewhere the server refuses to start.
 * SIGTERM/SIGINT close the listener, let open requests finish, then close the store.
 */
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { serve as serveNode } from "@hono/node-server";
import { createApp } from "../api/app.js";
import { type AuthConfig, parseTokens, type TokenScope } from "../api/auth.js";
import type { Clock } from "../clock.js";
import type { LeaseStore } from "../lease.js";

export interface ServeOptions {
  store: LeaseStore;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  tokens?: TokenScope[];
  /** Explicit opt-out of auth; implied on loopback when no tokens are given. */
  insecureNoAuth?: boolean;
  maxSkewMs?: number;
  watchPollMs?: number;
  heartbeatMs?: number;
  clock?: Clock;
}

export interface RunningServer {
  url: string;
  port: number;
  auth: "tokens" | "insecure-no-auth";
  close(): Promise<void>;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1)$/;

export function resolveAuth(
  host: string,
  tokens: TokenScope[] | undefined,
  insecureNoAuth: boolean | undefined,
): AuthConfig {
  if (tokens && tokens.length > 0 && !insecureNoAuth) return { tokens };
  if (insecureNoAuth || LOOPBACK.test(host)) return { insecureNoAuth: true };
  throw new Error(
    `refusing to serve on ${host} without tokens: set LEASEHOLD_TOKENS, or LEASEHOLD_INSECURE_NO_AUTH=1 if you really mean it`,
  );
}

export async function serve(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? "127.0.0.1";
  const auth = resolveAuth(host, options.tokens, options.insecureNoAuth);
  const app = createApp({
    store: options.store,
    auth,
    ...(options.maxSkewMs === undefined ? {} : { maxSkewMs: options.maxSkewMs }),
    ...(options.watchPollMs === undefined ? {} : { watchPollMs: options.watchPollMs }),
    ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const server = await new Promise<ReturnType<typeof serveNode>>((resolve, reject) => {
    const s = serveNode({ fetch: app.fetch, hostname: host, port: options.port ?? 8787 }, () => resolve(s));
    s.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    port,
    auth: "tokens" in auth ? "tokens" : "insecure-no-auth",
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Watch streams never end by themselves: cut idle and streaming connections.
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}

/** Opens the store named by the environment: LEASEHOLD_STORE, else the SQLite file. */
export async function storeFromEnv(env: NodeJS.ProcessEnv): Promise<LeaseStore> {
  if (env.LEASEHOLD_STORE) {
    const { openStore } = await import("../open-store.js");
    return openStore(env.LEASEHOLD_STORE, { env });
  }
  const { SqliteStore } = await import("../stores/sqlite.js");
  return new SqliteStore({ path: env.LEASEHOLD_DB ?? "./data/leasehold.db" });
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const store = await storeFromEnv(env);
  const port = env.PORT === undefined ? 8787 : Number(env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT: expected 0-65535, got ${env.PORT}`);
  const server = await serve({
    store,
    host: env.HOST ?? "127.0.0.1",
    port,
    ...(env.LEASEHOLD_TOKENS ? { tokens: parseTokens(env.LEASEHOLD_TOKENS) } : {}),
    insecureNoAuth: env.LEASEHOLD_INSECURE_NO_AUTH === "1",
    ...(env.LEASEHOLD_MAX_SKEW_MS ? { maxSkewMs: Number(env.LEASEHOLD_MAX_SKEW_MS) } : {}),
  });
  const where = env.LEASEHOLD_STORE ?? `sqlite:${env.LEASEHOLD_DB ?? "./data/leasehold.db"}`;
  console.error(`leasehold API on ${server.url} (store ${where}, auth ${server.auth})`);
  if (server.auth === "insecure-no-auth")
    console.error("warning: no auth (loopback only); set LEASEHOLD_TOKENS to require tokens");
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    console.error(`${signal}: shutting down`);
    await server.close();
    await store.close?.();
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(`leasehold: ${(error as Error).message}`);
    process.exit(1);
  });
}
