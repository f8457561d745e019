/**
 * PostgreSQL 15 (Debian's postgresql-15, which `.ci/run` installs) for the whole test run: a fresh
 * cluster in a temporary folder on 127.0.0.1 and a free port (test/support/postgres-server.ts).
 * Sets POSTGRES_URL (the `leasehold` database, password auth); each test file uses its own tables.
 */
import { startPostgres } from "../support/postgres-server.js";
import type { StartedServer } from "./global-setup.js";

export async function start(): Promise<StartedServer> {
  const server = await startPostgres();
  return { env: { POSTGRES_URL: server.url }, stop: () => server.stop() };
}
