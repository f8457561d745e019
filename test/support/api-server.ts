/** Starts the real Node API server on an ephemeral 127.0.0.1 port for a test file. */
import type { TokenScope } from "../../src/api/auth.js";
import { MemoryStore } from "../../src/backends/memory/store.js";
import type { LeaseStore } from "../../src/lease.js";
import { type RunningServer, type ServeOptions, serve } from "../../src/runtime/node.js";

export const TOKENS = {
  admin: "admin-token-0123456789abcdef",
  reader: "reader-token-0123456789abcdef",
  adapters: "adapters-token-0123456789abcdef",
} as const;

/** One instance for the requests a test process makes by hand (a client picks its own). */
export const TEST_INSTANCE = "test-instance-0123456789abcdef";

/** A body for POST `path` with this process's instance, where the route takes one. */
export function withInstance(path: string, body: unknown): unknown {
  const takesOne = /\/(acquire|renew|release|heartbeat|handoff|leave)$/.test(path.split("?")[0] ?? "");
  return takesOne && typeof body === "object" && body !== null && !Array.isArray(body)
    ? { instance: TEST_INSTANCE, ...body }
    : body;
}

export const TOKEN_SCOPES: TokenScope[] = [
  { name: "admin", token: TOKENS.admin, prefixes: [""], verbs: ["read", "write", "cas", "metrics"] },
  { name: "reader", token: TOKENS.reader, prefixes: [""], verbs: ["read"] },
  { name: "adapters", token: TOKENS.adapters, prefixes: ["adapters/"], verbs: ["read", "write", "cas"] },
];

export async function startApi(
  options: Partial<ServeOptions> & { store?: LeaseStore } = {},
): Promise<RunningServer & { store: LeaseStore }> {
  const store = options.store ?? new MemoryStore();
  const server = await serve({ port: 0, host: "127.0.0.1", tokens: TOKEN_SCOPES, ...options, store });
  return { ...server, store };
}
