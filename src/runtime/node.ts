/**
 * The API on Node: `npm start` runs this file, `leasehold serve` calls `startServer` with its
 * flags laid over the environment. The variables, their defaults and bounds are read by
 * src/api/config/policy.ts (README: "Server configuration"); a bad value refuses to start, naming the
 * variable. One start-up line on stderr states the address, the store, the real auth mode and the
 * settings. SIGTERM/SIGINT close the listener, let open requests finish, then close the store.
 */

import { type Server, STATUS_CODES } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { pathToFileURL } from "node:url";
import { serve as serveNode } from "@hono/node-server";
import { type AdmissionOptions, type ApiLimits, createApp } from "../api/app.js";
import type { TokenScope } from "../api/auth.js";
import { type AuthMode, authConfig, resolveAuth } from "../api/config/auth-mode.js";
import { readServerConfig, type ServerConfig } from "../api/config/policy.js";
import { startupLine } from "../api/config/startup-line.js";
import { LISTENER_BOUNDS, type ListenerLimits } from "../api/config/variables.js";
import type { ConsoleOptions } from "../api/console/options.js";
import { type ApiLogger, createLogger } from "../api/log.js";
import { ProblemError, problemAnswer } from "../api/problems.js";
import type { Clock } from "../clock.js";
import { defined } from "../defined.js";
import { LatenessProbe } from "../elector/lateness.js";
import { LeaseValidationError } from "../errors.js";
import type { ProblemKind } from "../http/problem-kinds.js";
import type { LeaseStore } from "../lease.js";
import { openStore } from "../open-store.js";

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
  /** Deadline of each store call (createApp's storeTimeoutMs). */
  storeTimeoutMs?: number;
  clock?: Clock;
  /** The server's operational log (src/api/log.ts). Default: none. */
  log?: ApiLogger;
  /** createApp's bounds (src/api/app.ts ApiLimits). */
  limits?: ApiLimits;
  /** The listener's bounds: header and request timeouts, idle keep-alive, connection cap (src/api/config/policy.ts). */
  listener?: Partial<ListenerLimits>;
  /** The console at /ui and its change log (createApp's `console`). */
  console?: ConsoleOptions;
  /**
   * Renewals first (src/api/admission.ts): requests in flight, the share reserved for current
   * holders, and the event-loop lateness past which only they are served (measured here by a
   * LatenessProbe), with the bounds' defaults for what is not given. Default for `serve()`: off (a
   * library caller or a test decides); `npm start` and `leasehold serve` turn it on from their
   * variables (LEASEHOLD_IN_FLIGHT, LEASEHOLD_RESERVED_IN_FLIGHT, LEASEHOLD_LATE_MS).
   */
  admission?: Omit<AdmissionOptions, "lateness">;
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
  const probe = options.admission ? new LatenessProbe() : undefined;
  const admission = probe ? { ...options.admission, lateness: () => probe.now() } : undefined;
  const app = createApp({
    store: options.store,
    auth: authConfig(auth),
    ...defined({
      maxSkewMs: options.maxSkewMs,
      watchPollMs: options.watchPollMs,
      heartbeatMs: options.heartbeatMs,
      storeTimeoutMs: options.storeTimeoutMs,
      clock: options.clock,
      log: options.log,
      limits: options.limits,
    }),
    // Without tokens on loopback: only loopback Hosts, so DNS rebinding cannot reach it from a browser.
    ...(auth.mode === "none" && auth.because === "loopback" ? { allowedHosts: "loopback" as const } : {}),
    ...defined({ console: options.console }),
    ...(admission ? { admission } : {}),
  });
  const bounds = { ...defaultListener(), ...options.listener };
  const server = await new Promise<ReturnType<typeof serveNode>>((resolve, reject) => {
    const s = serveNode(
      {
        fetch: app.fetch,
        hostname: host,
        port: options.port ?? 8787,
        serverOptions: {
          headersTimeout: bounds.headersTimeoutMs,
          requestTimeout: bounds.requestTimeoutMs,
          keepAliveTimeout: bounds.keepAliveTimeoutMs,
          // How often Node checks the two timeouts above (default 30 s, which would let a slow
          // client hold a connection for that long past them).
          connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(bounds.headersTimeoutMs / 4))),
        },
      },
      () => resolve(s),
    );
    s.once("error", reject);
  });
  probe?.start();
  guardListener(server as Server, bounds);
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    port,
    auth: auth.mode === "tokens" ? "tokens" : "insecure-no-auth",
    close: () =>
      new Promise<void>((resolve) => {
        probe?.stop();
        server.close(() => resolve());
        // Watch streams never end by themselves: cut idle and streaming connections.
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}

function defaultListener(): ListenerLimits {
  return Object.fromEntries(Object.entries(LISTENER_BOUNDS).map(([k, b]) => [k, b.default])) as ListenerLimits;
}

/** A problem answer written on a raw socket: Node's own refusals, before any request reached the app. */
function rawAnswer(problem: ProblemError): string {
  const { status, headers, body } = problemAnswer(problem);
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Connection: close",
    "",
    body,
  ].join("\r\n");
}

/** What Node refuses on its own (its `clientError` codes), answered as problems like everything else. */
const CLIENT_ERRORS: Record<string, [ProblemKind, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [
    "request-timeout",
    "the request's headers or body did not arrive within this server's timeouts",
  ],
  HPE_HEADER_OVERFLOW: ["headers-too-large", "the request's headers are larger than this server accepts"],
};

/**
 * The listener's own answers: Node's 400/408/431 as problem+json (the `clientError` handler writes
 * them, where Node would write plain text), and past `maxConnections` open connections, or past
 * `maxConnectionsPerAddress` from one peer address, a new one is answered 503 with Retry-After,
 * instead of being held or dropped unanswered. Every such answer closes the connection after a
 * short grace (`answerAndClose`): a client that ignores it keeps neither its slot nor its socket.
 */
function guardListener(
  server: Server,
  bounds: Pick<ListenerLimits, "maxConnections" | "maxConnectionsPerAddress">,
): void {
  const grace = new AnswerGrace();
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    // As Node itself decides: answer unless a response has begun (then only closing is left).
    const response = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    const [kind, detail] = CLIENT_ERRORS[error.code ?? ""] ?? ["bad-request", "the request is not valid HTTP/1.1"];
    grace.answerAndClose(socket, rawAnswer(new ProblemError(kind, detail)));
  });
  const peers = new PeerConnections(bounds);
  server.on("connection", (socket: Socket) => {
    const refusal = peers.admit(socket);
    if (refusal) grace.answerAndClose(socket, refusal);
  });
}

/**
 * Closing a connection the listener answered with an error: it reads nothing more from it, sends
 * the answer and FIN, and destroys the socket `ANSWER_GRACE_MS` later whatever the client does
 * (one that ignores a 408 and trickles on would otherwise keep a half-closed socket for good). At
 * most `MAX_IN_GRACE` sockets wait out their grace at once; past it one is destroyed at once, so a
 * flood of reconnecting clients cannot hold descriptors through the grace either.
 */
class AnswerGrace {
  static readonly ANSWER_GRACE_MS = 1000;
  static readonly MAX_IN_GRACE = 1024;
  private waiting = 0;

  answerAndClose(socket: Socket, answer: string): void {
    socket.pause();
    socket.end(answer);
    if (this.waiting >= AnswerGrace.MAX_IN_GRACE) {
      socket.destroy();
      return;
    }
    this.waiting++;
    const timer = setTimeout(() => socket.destroy(), AnswerGrace.ANSWER_GRACE_MS);
    timer.unref();
    socket.once("close", () => {
      clearTimeout(timer);
      this.waiting--;
    });
  }
}

/**
 * Open connections, in total and per peer address (an IPv4-mapped IPv6 address counts as its IPv4
 * one). A connection refused here is answered and closed by the caller and counts towards neither
 * bound: only connections being served hold a slot.
 */
class PeerConnections {
  private open = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(private readonly bounds: Pick<ListenerLimits, "maxConnections" | "maxConnectionsPerAddress">) {}

  /** Counts `socket` until it closes, or returns the 503 to answer it with. */
  admit(socket: Socket): string | undefined {
    const address = (socket.remoteAddress ?? "").replace(/^::ffff:/, "");
    const mine = this.byAddress.get(address) ?? 0;
    if (mine >= this.bounds.maxConnectionsPerAddress) {
      return overConnections(
        "maxConnectionsPerAddress",
        `this server has ${mine} connections open from your address, the most it serves one address (maxConnectionsPerAddress); retry later`,
      );
    }
    if (this.open >= this.bounds.maxConnections) {
      return overConnections(
        "maxConnections",
        `this server has ${this.open} connections open, the most it serves (maxConnections); retry later`,
      );
    }
    this.open++;
    this.byAddress.set(address, mine + 1);
    socket.once("close", () => {
      this.open--;
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left === 0) this.byAddress.delete(address);
      else this.byAddress.set(address, left);
    });
    return undefined;
  }
}

function overConnections(bound: "maxConnections" | "maxConnectionsPerAddress", detail: string): string {
  return rawAnswer(new ProblemError("over-capacity", detail, { bound, retryAfter: 1 }));
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
  if (!config.listen) throw new Error(`${config.entry} has no Node listener`);
  for (const warning of config.warnings) log(`warning: ${warning}`);
  const store = await openStore(config.store.url, { env: config.storeEnv });
  let server: RunningServer;
  try {
    server = await listen(
      {
        store,
        port: config.listen.port,
        ...config.app,
        ...(config.listener ? { listener: config.listener } : {}),
        ...(config.admission ? { admission: config.admission } : {}),
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
