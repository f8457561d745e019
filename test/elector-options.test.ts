import { describe, expect, it } from "vitest";
import { Elector, LeaseValidationError, MemoryStore } from "../src/index.js";

const store = new MemoryStore();

function issuesOf(options: Record<string, unknown>): LeaseValidationError {
  try {
    new Elector({ store, name: "jobs/main", ...options } as never);
  } catch (error) {
    expect(error).toBeInstanceOf(LeaseValidationError);
    return error as LeaseValidationError;
  }
  throw new Error("expected the options to be rejected");
}

describe("elector options", () => {
  it("defaults follow client-go's proportions", () => {
    const e = new Elector({ store, name: "jobs/main" });
    expect({ lease: e.leaseMs, renew: e.renewMs, retry: e.retryMs, safety: e.safetyMs }).toEqual({
      lease: 15_000,
      renew: 5_000,
      retry: 2_000,
      safety: 1_500,
    });
    expect(e.identity).toMatch(/^candidate-[0-9a-f]{8}$/);
  });

  it("renewMs must leave room before the safe window closes", () => {
    const e = issuesOf({ leaseMs: 1000, renewMs: 950 });
    expect(e.issues).toEqual([
      {
        path: "renewMs",
        message: expect.stringContaining("expected less than leaseMs - safetyMs (1000 - 100 = 900), got 950"),
      },
    ]);
    expect(e.message).toMatch(/^invalid elector options: renewMs: /);
  });

  it("names every bad field at once", () => {
    const e = issuesOf({ name: "Bad Name", leaseMs: 1.5, jitter: 3, store: {}, metadata: { a: 1 } });
    expect(e.issues.map((i) => i.path).sort()).toEqual(["jitter", "leaseMs", "metadata.a", "name", "store"]);
    expect(e.issues.find((i) => i.path === "store")?.message).toBe(
      "expected a LeaseStore (an object with get and put)",
    );
  });

  it("safetyMs and retryMs are bounded by the lease", () => {
    expect(issuesOf({ leaseMs: 1000, safetyMs: 1000, renewMs: 10 }).issues.map((i) => i.path)).toContain("safetyMs");
    expect(issuesOf({ leaseMs: 1000, retryMs: 5000 }).issues.map((i) => i.path)).toEqual(["retryMs"]);
  });

  it("a misspelt option is refused, not ignored", () => {
    expect(issuesOf({ leaseMS: 5000 }).issues).toEqual([{ path: "leaseMS", message: "unknown field" }]);
  });

  it("metadata over 1 KiB is refused", () => {
    expect(issuesOf({ metadata: { big: "x".repeat(1100) } }).issues[0]?.message).toBe(
      "expected at most 1024 bytes as JSON",
    );
  });
});
