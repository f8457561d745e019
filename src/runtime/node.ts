/**
 * The API on Node: `npm start` runs this file, `leasehold serve` calls `startServer` with its
 * flags laid over the environment. The variables, their defaults and bounds are read by
 * src/runtime/config.ts (README: "Server configuration"); a bad value refuses to start, naming the
 * variable. One start-up line on stderr states the address, the store, the real auth mode and the
 * settings. SIGTERM/SIGINT close the listener, let open requests finish, then close the store.
 */

import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { serve as serveNode } from "@hono/node-server";
import { createApp } from "../api/app.js";
import type { TokenScope } from "../api/auth.js";
import type { ConsoleOptions } from "../api/console/options.js";
import { type ApiLogger, createLogger } from "../api/log.js";
import type { Clock } from "../clock.js";
import { LeaseValidationError } from "../errors.js";
import type { LeaseStore } from "../lease.js";
import { openStore } from "../open-store.js";
import { type AuthMode, authConfig, readServerConfig, resolveAuth, type ServerConfig, startupLine } from "./config.js";

export interface ServeOptions {
  store: LeaseStore;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  tokens?: TokenScope[];
  /** Explicit opt-out of auth; implied on loopback when no tokens are given; refused together with tokens. */
  insecureNoAuth?: boolean;
  maxSkewMs?: number;
  watchPollMs?: number;
  heartbeatMs?: number;
  clock?: Clock;
  /** The server's operational log (src/api/log.ts). Default: none. */
  log?: ApiLogger;
  /** The console at /ui and its change log (createApp's `console`). */
  console?: ConsoleOptions;
}

export interface RunningServer {
  url: string;
  port: number;
  auth: "tokens" | "insecure-no-auth";
  close(): Promise<void>;
}

/** Serves the API for a library caller or a test: the same auth rule as the environment's. */
export async function serve(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? "127.0.0.1";
  const resolved = resolveAuth(
    { tokens: options.tokens, insecure: options.insecureNoAuth === true, host },
    { tokens: "tokens", insecure: "insecureNoAuth", insecureHint: "insecureNoAuth: true if you really mean it" },
  );
  if ("issue" in resolved) throw new LeaseValidationError("serve options", [resolved.issue]);
  return listen(options, host, resolved.auth);
}

async function listen(options: ServeOptions, host: string, auth: AuthMode): Promise<RunningServer> {
  const app = createApp({
    store: options.store,
    auth: authConfig(auth),
    ...(options.maxSkewMs === undefined ? {} : { maxSkewMs: options.maxSkewMs }),
    ...(options.watchPollMs === undefined ? {} : { watchPollMs: options.watchPollMs }),
    ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.log === undefined ? {} : { log: options.log }),
    ...(options.console === undefined ? {} : { console: options.console }),
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
    auth: auth.mode === "tokens" ? "tokens" : "insecure-no-auth",
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Watch streams never end by themselves: cut idle and streaming connections.
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}

export interface StartedServer {
  config: ServerConfig;
  server: RunningServer;
  store: LeaseStore;
  /** The start-up line, as logged. */
  line: string;
  /** Closes the listener, then the store. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Where the start-up line and warnings go. Default: stderr, prefixed "leasehold: ". */
  log?: (line: string) => void;
  /** For tests. */
  clock?: Clock;
}

/** Opens the configured store and serves on the configured address: what both Node entries do. */
export async function startServer(config: ServerConfig, options: StartOptions = {}): Promise<StartedServer> {
  const logger = createLogger(config.logFormat);
  const log = options.log ?? ((line: string) => logger.info(line));
  if (config.store.kind !== "url" || !config.listen) throw new Error(`${config.entry} has no Node listener`);
  for (const warning of config.warnings) log(`warning: ${warning}`);
  const store = await openStore(config.store.url, { env: config.storeEnv });
  let server: RunningServer;
  try {
    server = await listen(
      {
        store,
        port: config.listen.port,
        ...config.app,
        console: config.console,
        log: logger,
        ...(options.clock ? { clock: options.clock } : {}),
      },
      config.listen.host,
      config.auth,
    );
  } catch (error) {
    await store.close?.();
    throw error;
  }
  const line = startupLine(config, server.url);
  log(line);
  return {
    config,
    server,
    store,
    line,
    close: async () => {
      await server.close();
      await store.close?.();
    },
  };
}

/** `npm start`: the environment's configuration; resolves once listening. */
export async function start(
  env: Record<string, string | undefined>,
  options: StartOptions = {},
): Promise<StartedServer> {
  return startServer(readServerConfig(env, "node"), options);
}

export async function main(env: Record<string, string | undefined> = process.env): Promise<void> {
  // Listening for the signals before the start-up line is printed: a supervisor may stop the
  // server the moment it reads it. A second signal gets the default action (exit at once).
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  const started = await start(env);
  createLogger(started.config.logFormat).info(`${await signal}: shutting down`);
  await started.close();
  process.exit(0);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(`leasehold: ${(error as Error).message}`);
    process.exit(1);
  });
}
