/**
 * Toxiproxy (test/support/toxiproxy.ts) for the whole test run: one toxiproxy-server on a free
 * loopback port. Sets TOXIPROXY_URL (its HTTP API); each test file creates proxies of its own,
 * under names no other file uses, in front of the servers it needs.
 */
import { startToxiproxy } from "../support/toxiproxy.js";
import type { StartedServer } from "./global-setup.js";

export async function start(): Promise<StartedServer> {
  const server = await startToxiproxy();
  return { env: { TOXIPROXY_URL: server.api.apiUrl }, stop: server.stop };
}
