/** Bound leases over the HTTP store against the real API server, judged by the contract's manual clock. */
import { afterAll, beforeAll } from "vitest";
import { HttpStore } from "../src/backends/http/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { systemClock } from "../src/clock.js";
import { describeBoundContract } from "../src/testkit/bound-contract.js";
import type { ElectorContractContext } from "../src/testkit/elector-contract.js";
import { startApi, TOKENS } from "./support/api-server.js";
import { SwitchableClock } from "./support/switchable-clock.js";

const serverClock = new SwitchableClock();
let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  api = await startApi({
    store: new SqliteStore({ path: ":memory:" }),
    watchPollMs: 50,
    clock: serverClock,
    maxSkewMs: 0,
  });
});
afterAll(async () => {
  await api.close();
  await api.store.close?.();
});

const connect = () => new HttpStore({ baseUrl: api.url, token: TOKENS.admin });
describeBoundContract(
  "http",
  async (context: ElectorContractContext) => {
    serverClock.target = context.clock ?? systemClock;
    return { store: connect() };
  },
  // Each process its own HttpStore: its own instance, as the API's holding rules see processes.
  { connect },
);
