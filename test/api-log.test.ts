/**
 * The server's operational log (src/api/log.ts): one line per request answered 5xx, per store
 * failure and per holder change the server wrote, as text or JSON lines, and never a token or a
 * backend's own message. In-process through the real HTTP server, and `npm start`'s entry as a
 * process with LEASEHOLD_LOG=json.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../src/api/log.js";
import { LeaseStoreError } from "../src/errors.js";
import type { LeaseStore } from "../src/lease.js";
import { startApi, TOKENS } from "./support/api-server.js";
import { repo, until } from "./support/cli-processes.js";

/** Every write of this process carries its instance. */
const INSTANCE = crypto.randomUUID();

const post = (url: string, path: string, body: object) =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${TOKENS.admin}`, "Content-Type": "application/json" },
    body: JSON.stringify({ instance: INSTANCE, ...body }),
  });

describe("createLogger", () => {
  it("text: one prefixed line with key=value pairs, quoting values with spaces; json: one object per line", () => {
    const lines: string[] = [];
    const text = createLogger(
      "text",
      (l) => lines.push(l),
      () => 0,
    );
    text.error("store call failed", { op: "put", detail: "a b", ambiguous: true, missing: undefined });
    text.info("lease holder changed", { lease: "jobs/a", from: null, to: "b", term: 2 });
    const json = createLogger(
      "json",
      (l) => lines.push(l),
      () => 0,
    );
    json.info("lease holder changed", { lease: "jobs/a", to: "b", term: 2 });
    expect(lines).toEqual([
      'leasehold: error: store call failed op=put detail="a b" ambiguous=true',
      "leasehold: lease holder changed lease=jobs/a from=null to=b term=2",
      '{"time":"1970-01-01T00:00:00.000Z","level":"info","msg":"lease holder changed","lease":"jobs/a","to":"b","term":2}',
    ]);
  });
});

describe("what the server logs", () => {
  it("holder changes it wrote (acquire, takeover of a free lease, release), not renewals", async () => {
    const lines: string[] = [];
    const api = await startApi({ log: createLogger("text", (l) => lines.push(l)) });
    try {
      const path = "/v1/leases/jobs%2Flogged";
      expect((await post(api.url, `${path}/acquire`, { holder: "a", leaseMs: 60_000 })).status).toBe(200);
      expect((await post(api.url, `${path}/acquire`, { holder: "a", leaseMs: 60_000 })).status).toBe(200);
      expect((await post(api.url, `${path}/renew`, { holder: "a", term: 1 })).status).toBe(200);
      expect((await post(api.url, `${path}/release`, { holder: "a", term: 1 })).status).toBe(200);
      expect((await post(api.url, `${path}/acquire`, { holder: "b", leaseMs: 60_000 })).status).toBe(200);
      // Each names the token that made the change (its name, never the token).
      expect(lines).toEqual([
        "leasehold: lease holder changed lease=jobs/logged from=null to=a term=1 by=admin",
        "leasehold: lease holder changed lease=jobs/logged from=a to=null term=1 by=admin",
        "leasehold: lease holder changed lease=jobs/logged from=null to=b term=2 by=admin",
      ]);
    } finally {
      await api.close();
    }
  });

  it("holders that could forge or hide lines (line separators, bidi controls) are refused; the log escapes them in what reaches it anyway; no instance is logged", async () => {
    const lines: string[] = [];
    const api = await startApi({ log: createLogger("text", (l) => lines.push(l)) });
    try {
      const holder = "evil\u2028leasehold: lease holder changed lease=jobs/x to=admin\u202e";
      expect((await post(api.url, "/v1/leases/jobs%2Fforged/acquire", { holder, leaseMs: 60_000 })).status).toBe(400);
      expect((await post(api.url, "/v1/leases/jobs%2Fforged/acquire", { holder: "a", leaseMs: 60_000 })).status).toBe(
        200,
      );
      expect(lines).toHaveLength(1);
      expect(lines.join("\n")).not.toContain(INSTANCE);
      // A record written before 0.2.0 may still carry such a holder: the log escapes it.
      const escaped: string[] = [];
      createLogger("text", (l) => escaped.push(l)).info("lease holder changed", { lease: "jobs/x", to: holder });
      expect(escaped).toHaveLength(1);
      expect(escaped[0]).toContain("\\u2028");
      expect(escaped[0]).toContain("\\u202e");
      expect(escaped[0]).not.toMatch(/[\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    } finally {
      await api.close();
    }
  });

  it("a store failure and the 503 it causes: class, code and ambiguity, never the backend's message or a token", async () => {
    const lines: string[] = [];
    const failing: LeaseStore = {
      get: async () => null,
      put: async () => {
        const cause = Object.assign(new Error("connect ECONNRESET /var/lib/secret/leases.db"), { code: "ECONNRESET" });
        throw new LeaseStoreError("SQLite /var/lib/secret/leases.db: reset", { ambiguous: true, cause });
      },
    };
    const api = await startApi({ store: failing, log: createLogger("json", (l) => lines.push(l)) });
    try {
      const res = await post(api.url, "/v1/leases/jobs%2Ffails/acquire", { holder: "a", leaseMs: 1000 });
      expect(res.status).toBe(503);
      const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(logged).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            level: "error",
            msg: "store call failed",
            op: "put",
            error: "LeaseStoreError",
            code: "ECONNRESET",
            ambiguous: true,
          }),
          expect.objectContaining({
            level: "error",
            msg: "request failed",
            method: "POST",
            route: "/v1/leases/:name/acquire",
            status: 503,
            problem: "store-unavailable",
          }),
        ]),
      );
      const all = lines.join("\n");
      expect(all).not.toContain("/var/lib/secret");
      expect(all).not.toContain(TOKENS.admin);
    } finally {
      await api.close();
    }
  });
});

describe("LEASEHOLD_LOG=json on npm start's entry", () => {
  const children: Array<ReturnType<typeof spawn>> = [];
  afterAll(() => {
    for (const c of children) c.kill("SIGKILL");
  });

  it("every line on stderr is one JSON object: start-up, holder changes, shutdown", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", join("src", "runtime", "node.ts")], {
      cwd: repo,
      env: { PATH: process.env.PATH ?? "", PORT: "0", LEASEHOLD_STORE: "memory:", LEASEHOLD_LOG: "json" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    const started = await until("the start-up line", () =>
      stderr
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { msg: string })
        .find((l) => l.msg.startsWith("API on")),
    );
    const url = /API on (http:\/\/[^;]+);/.exec(started.msg)?.[1] ?? "";
    const res = await fetch(`${url}/v1/leases/jobs%2Fjson/acquire`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ holder: "a", instance: INSTANCE, leaseMs: 5000 }),
    });
    expect(res.status).toBe(200);
    await until("the holder change", () => stderr.includes("lease holder changed"));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const lines = stderr
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.msg)).toEqual([started.msg, "lease holder changed", "SIGTERM: shutting down"]);
    expect(lines[1]).toMatchObject({ level: "info", lease: "jobs/json", from: null, to: "a", term: 1, by: "anyone" });
    // The instance is proof of who holds the lease: it is never logged (only its digest is kept).
    expect(stderr).not.toContain(INSTANCE);
  });
});
