/**
 * A clock whose source a test can change: an API server started once for a test file judges
 * expiry by the real clock for some suites and by one test's ManualClock for the elector
 * contract (ElectorContractContext), so the server and the electors agree on how much time passed.
 */
import { type Clock, systemClock } from "../../src/clock.js";

export class SwitchableClock implements Clock {
  target: Clock = systemClock;

  now(): number {
    return this.target.now();
  }

  wallNow(): number {
    return this.target.wallNow();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.target.sleep(ms, signal);
  }
}
