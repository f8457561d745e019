/** The chaos harness's own parts: the process gate, the faulty network, and the checker's rules. */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { ManualClock } from "../../src/clock.js";
import { LeaseConflictError } from "../../src/errors.js";
import { makeRecord } from "../../src/testkit/store-contract.js";
import { ChaosStore, Network, NO_FAULTS } from "./chaos-store.js";
import { checkTrace, SafeWindowTracker, type Trace } from "./checker.js";
import { Prng } from "./prng.js";
import { type MonotonicFaults, SimProcess } from "./process.js";

const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));

function world() {
  const clock = new ManualClock({ idle: immediate });
  const proc = (label: string, offset = 0, monotonic: MonotonicFaults = {}) =>
    new SimProcess(label, clock, offset, immediate, monotonic);
  return { clock, proc };
}

describe("SimProcess", () => {
  it("a paused process's timers fire late, in the order they came due, with true time moved on", async () => {
    const { clock, proc } = world();
    const p = proc("p");
    const fired: Array<[string, number]> = [];
    void p.clock.sleep(300).then(() => fired.push(["b", clock.now()]));
    void p.clock.sleep(100).then(() => fired.push(["a", clock.now()]));
    p.pause();
    await clock.advance(1000);
    expect(fired).toEqual([]);
    expect(p.backlog).toBe(2);
    await p.resume();
    expect(fired).toEqual([
      ["a", 1000],
      ["b", 1000],
    ]);
    expect(p.clock.now()).toBe(1000);
  });

  it("a crashed process never runs again; its wall clock is offset by its skew", async () => {
    const { clock, proc } = world();
    const p = proc("p", -250);
    expect(p.clock.wallNow()).toBe(clock.wallNow() - 250);
    let fired = false;
    void p.clock.sleep(10).then(() => {
      fired = true;
    });
    p.crash();
    await p.resume();
    await clock.advance(100);
    expect(fired).toBe(false);
  });

  it("a drifting clock's timers fire when its own clock reaches the deadline: late when slow, early when fast", async () => {
    const { clock, proc } = world();
    const slow = proc("slow", 0, { driftRate: -0.5, originMs: 1000 });
    const fast = proc("fast", 0, { driftRate: 0.25 });
    const fired: Array<[string, number, number]> = [];
    void slow.clock.sleep(100).then(() => fired.push(["slow", clock.now(), slow.clock.now()]));
    void fast.clock.sleep(100).then(() => fired.push(["fast", clock.now(), fast.clock.now()]));
    await clock.advance(1000);
    expect(fired).toEqual([
      ["fast", 80, 100],
      ["slow", 200, 1100],
    ]);
    expect(slow.clock.now()).toBe(1500);
    expect(slow.clock.toTrue(1100)).toBe(200);
    // Only the monotonic clock drifts: the wall clock keeps its fixed offset from true time.
    expect(slow.clock.wallNow()).toBe(clock.wallNow());
  });
});

describe("ChaosStore", () => {
  it("a put sent before a pause lands while its sender is frozen; the answer arrives on resume", async () => {
    const { clock, proc } = world();
    const inner = new MemoryStore();
    const network = new Network(clock, new Prng(1), { ...NO_FAULTS, baseLatencyMs: 10 });
    const p = proc("p");
    const store = new ChaosStore(inner, network, p);
    let answered = false;
    void store.put(makeRecord("a/b"), null).then(() => {
      answered = true;
    });
    p.pause();
    await clock.advance(100);
    expect((await inner.get("a/b"))?.record.holder).toBe("alice");
    expect(answered).toBe(false);
    await p.resume();
    expect(answered).toBe(true);
  });

  it("a reordered put is applied only after a later put from another candidate", async () => {
    const { clock, proc } = world();
    const inner = new MemoryStore();
    const network = new Network(clock, new Prng(1), { ...NO_FAULTS, reorderP: 1, maxHoldMs: 10_000 });
    const first = new ChaosStore(inner, network, proc("first"));
    const base = await inner.put(makeRecord("a/b"), null);
    const held = first.put(makeRecord("a/b", { holder: "first", term: 2 }), base.revision);
    await clock.advance(100);
    expect(network.applied).toEqual([]);
    network.profile.reorderP = 0;
    const second = new ChaosStore(inner, network, proc("second"));
    await second.put(makeRecord("a/b", { holder: "second", term: 2 }), base.revision);
    await expect(held).rejects.toBeInstanceOf(LeaseConflictError);
    expect(network.applied.map((a) => a.sender)).toEqual(["second"]);
    expect(network.faults.get("reorder")).toBe(1);
  });

  it("an error after apply is ambiguous and the write did land", async () => {
    const { clock, proc } = world();
    const inner = new MemoryStore();
    const network = new Network(clock, new Prng(1), { ...NO_FAULTS, failAfterP: 1 });
    const store = new ChaosStore(inner, network, proc("p"));
    await expect(store.put(makeRecord("a/b"), null)).rejects.toMatchObject({ ambiguous: true });
    expect(await inner.get("a/b")).not.toBeNull();
  });
});

describe("checker", () => {
  const election = (candidate: string, term: number, at: number) => ({ candidate, identity: candidate, term, at });

  it("accepts a clean handover", () => {
    expect(
      checkTrace({
        elections: [election("a", 1, 0), election("b", 2, 1000)],
        windows: [
          { candidate: "a", term: 1, start: 0, end: 900 },
          { candidate: "b", term: 2, start: 1000, end: 1900 },
        ],
        storeWrites: [
          { holder: "a", term: 1 },
          { holder: "b", term: 2 },
        ],
        fenced: [
          { writer: "a", term: 1, sentAt: 10, landedAt: 10, accepted: true },
          { writer: "a", term: 1, sentAt: 1500, landedAt: 1500, accepted: false },
        ],
      }),
    ).toEqual([]);
  });

  it("names each broken property", () => {
    const violations = checkTrace({
      elections: [election("a", 2, 0), election("b", 2, 500), election("a", 1, 900)],
      windows: [
        { candidate: "a", term: 2, start: 0, end: 900 },
        { candidate: "b", term: 2, start: 500, end: 1400 },
      ],
      fenced: [
        { writer: "b", term: 2, sentAt: 600, landedAt: 600, accepted: true },
        { writer: "a", term: 1, sentAt: 950, landedAt: 950, accepted: true },
        { writer: "b", term: 2, sentAt: 1000, landedAt: 1000, accepted: false },
      ],
    });
    expect(violations).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^term 2 won twice: by a at 0 and by b at 500$/),
        expect.stringMatching(/^terms went from 2 .* to 1 /),
        expect.stringMatching(/^two candidates inside their safe windows at once: a term 2 \[0, 900\) and b term 2/),
        "resource accepted term 1 from a after term 2",
        expect.stringMatching(
          /^resource rejected term 2 from b, sent at 1000 and landed at 1000 inside its safe window$/,
        ),
      ]),
    );
  });

  describe("fails one doctored trace per invariant (none is vacuous)", () => {
    const LEASE = "chaos/lease";
    // Two clean tenures; the session records share the store with terms of their own.
    const clean = (): Trace => ({
      elections: [election("a", 1, 0), election("b", 2, 1000)],
      windows: [
        { candidate: "a", term: 1, start: 0, end: 900 },
        { candidate: "b", term: 2, start: 1000, end: 1900 },
      ],
      storeWrites: [
        { name: "chaos/_sessions/a", holder: "a", term: 1 },
        { name: LEASE, holder: "a", term: 1 },
        { name: "chaos/_sessions/b", holder: "b", term: 1 },
        { name: "chaos/_sessions/b", holder: "b", term: 2 },
        { name: LEASE, holder: "b", term: 2 },
      ],
      lease: LEASE,
      fenced: [
        { writer: "a", term: 1, sentAt: 10, landedAt: 10, accepted: true },
        { writer: "b", term: 2, sentAt: 1100, landedAt: 1100, accepted: true },
        { writer: "a", term: 1, sentAt: 1500, landedAt: 1500, accepted: false },
      ],
    });
    const cases: Array<{ invariant: string; doctor: (t: Trace) => void; names: RegExp; also?: RegExp }> = [
      {
        invariant: "a term won by two candidates",
        // A restarted process (b#2, same identity) claims b's term.
        doctor: (t) => t.elections.splice(1, 0, { candidate: "b#2", identity: "b", term: 2, at: 1000 }),
        names: /^term 2 won twice: by b#2 at 1000 and by b at 1000$/,
        also: /^terms went from 2 \(b#2 at 1000\) to 2 \(b at 1000\)$/,
      },
      {
        invariant: "one candidate elected twice for a term",
        doctor: (t) => t.elections.push(election("b", 2, 1000)),
        names: /^term 2 elected twice for b \(at 1000 and 1000\)$/,
        also: /^terms went from 2 \(b at 1000\) to 2 \(b at 1000\)$/,
      },
      {
        invariant: "the store applied one term for two holders",
        doctor: (t) => t.storeWrites!.push({ name: LEASE, holder: "c", term: 2 }),
        names: /^store applied term 2 for two holders: b and c$/,
      },
      {
        invariant: "elected, but the store never applied that term for the winner",
        // Term 2 written only to b's session record: not the lease's term 2.
        doctor: (t) => {
          t.storeWrites = t.storeWrites!.filter((w) => !(w.name === LEASE && w.term === 2));
        },
        names: /^b elected at term 2 but the store never applied that term for b$/,
      },
      {
        invariant: "terms increase",
        doctor: (t) => {
          t.elections = [election("b", 2, 0), election("a", 1, 1000)];
          t.windows = [];
          t.fenced = [];
        },
        names: /^terms went from 2 \(b at 0\) to 1 \(a at 1000\)$/,
      },
      {
        invariant: "elections in time order",
        doctor: (t) => {
          t.elections = [election("a", 1, 1000), election("b", 2, 0)];
        },
        names: /^elections recorded out of time order: 1000 then 0$/,
      },
      {
        invariant: "no two candidates inside their safe windows at once",
        doctor: (t) => {
          t.windows[1]!.start = 800;
        },
        names: /^two candidates inside their safe windows at once: a term 1 \[0, 900\) and b term 2 \[800, 1900\)$/,
      },
      {
        invariant: "a lower term's window ends before a higher term's begins",
        doctor: (t) => {
          t.windows[0] = { candidate: "a", term: 1, start: 2000, end: 2500 };
        },
        names: /^a higher term's window came first: b term 2 \[1000, 1900\) before a term 1 \[2000, 2500\)$/,
      },
      {
        invariant: "the resource never accepts a lower term after a higher one",
        doctor: (t) => t.fenced.push({ writer: "a", term: 1, sentAt: 1200, landedAt: 1200, accepted: true }),
        names: /^resource accepted term 1 from a after term 2$/,
      },
      {
        invariant: "the resource accepts a term only from its winner",
        doctor: (t) => t.fenced.push({ writer: "c", term: 2, sentAt: 1200, landedAt: 1200, accepted: true }),
        names: /^resource accepted term 2 from c, but that term was won by b$/,
      },
      {
        invariant: "the resource never rejects a write sent and landed inside its writer's safe window",
        doctor: (t) => t.fenced.push({ writer: "b", term: 2, sentAt: 1200, landedAt: 1200, accepted: false }),
        names: /^resource rejected term 2 from b, sent at 1200 and landed at 1200 inside its safe window$/,
      },
    ];

    it("passes the clean trace, whose session records reuse the lease's terms", () => {
      expect(checkTrace(clean())).toEqual([]);
      // Judged as the lease's own, those session records would be two holders for term 1.
      const { lease: _judgedAsTheLease, ...unfiltered } = clean();
      expect(checkTrace(unfiltered)).toEqual(["store applied term 1 for two holders: a and b"]);
    });

    it.each(cases)("fails when broken: $invariant", ({ doctor, names, also }) => {
      const trace = clean();
      doctor(trace);
      const violations = checkTrace(trace);
      expect(violations).toContainEqual(expect.stringMatching(names));
      // Nothing else is reported but what this breakage necessarily implies.
      for (const v of violations)
        expect(
          [names, also].some((re) => re?.test(v)),
          v,
        ).toBe(true);
    });
  });

  it("SafeWindowTracker ends a window at leaderUntil even if the belief lingers (a paused leader)", () => {
    const t = new SafeWindowTracker();
    t.sample("a", 0, { term: 1, until: 900 });
    t.sample("a", 300, { term: 1, until: 1200 });
    t.sample("a", 2000, { term: 1, until: 1200 });
    t.sample("a", 2500, undefined);
    expect(t.windows).toEqual([
      { candidate: "a", term: 1, start: 0, end: 300 },
      { candidate: "a", term: 1, start: 300, end: 1200 },
    ]);
  });
});
