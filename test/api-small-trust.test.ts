/**
 * The small trust items of issue 30 through the real API: a client that leaves mid-body is not a
 * server error; holders and metadata are plain text (no control, format or line-separator
 * characters: bidirectional controls showed `\u202e1-dop` as "pod-1"); metadata keys that name a
 * JavaScript object's machinery are refused by name, never dropped; the console's history gives
 * each tenant a share. Every refusal leaves the store unchanged.
 */
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/api/log.js";
import { LeaseholdClient } from "../src/http/client.js";
import type { Stored } from "../src/lease.js";
import { readable } from "../src/listing.js";
import { startApi, TOKENS } from "./support/api-server.js";
import { inProcessApi } from "./support/in-process-api.js";

const INSTANCE = "small-trust-instance-0123456789";
const path = (name: string, suffix = "") => `${LeaseholdClient.leasePath(name)}${suffix}`;

describe("a client that leaves before its body arrives", () => {
  it("is not a server error: nothing is logged, no 500 is counted, nothing is written", async () => {
    const lines: string[] = [];
    const api = await startApi({ log: createLogger("text", (l) => lines.push(l)) });
    try {
      for (let i = 0; i < 5; i++) {
        await new Promise<void>((resolve, reject) => {
          const socket = connect(Number(new URL(api.url).port), "127.0.0.1", () => {
            socket.write(
              `POST ${path("jobs/aborted", "/acquire")} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKENS.admin}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"holder":"a",`,
            );
            setTimeout(() => socket.destroy(), 50);
          });
          socket.on("close", () => resolve());
          socket.on("error", reject);
        });
      }
      // The server sees the close on its own time: wait until /metrics counts five answers.
      let metrics = "";
      for (let tries = 0; tries < 200; tries++) {
        metrics = await (
          await fetch(`${api.url}/metrics`, { headers: { Authorization: `Bearer ${TOKENS.admin}` } })
        ).text();
        if (/route="\/v1\/leases\/:name\/acquire"[^\n]*\} 5/.test(metrics)) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(metrics).toMatch(/route="\/v1\/leases\/:name\/acquire"[^\n]*status="400"[^\n]*\} 5/);
      expect(metrics).not.toMatch(/status="5\d\d"/);
      expect(lines.filter((l) => l.includes("error"))).toEqual([]);
      expect(await api.store.get("jobs/aborted")).toBeNull();
    } finally {
      await api.close();
    }
  });
});

function harness() {
  const api = inProcessApi();
  const call = async (method: string, p: string, body: string, headers: Record<string, string> = {}) => {
    const res = await api.fetch(`${api.url}${p}`, {
      method,
      headers: { Authorization: `Bearer ${TOKENS.admin}`, "Content-Type": "application/json", ...headers },
      body,
    });
    return { status: res.status, body: (await res.json()) as { errors?: Array<{ path: string; message: string }> } };
  };
  const snapshot = async (): Promise<Stored[]> => {
    const out: Stored[] = [];
    for await (const s of readable(api.store.list!(""))) out.push(s);
    return out;
  };
  return { api, call, snapshot };
}

const PLAIN_TEXT =
  "expected no control, format or line-separator characters (Unicode Cc, Cf, Zl, Zp: bidirectional controls among them)";

/** Characters that make text read as something else, or start a new line in a log. */
const HOSTILE = [
  ["right-to-left override", "\u202e"],
  ["left-to-right mark", "\u200e"],
  ["right-to-left mark", "\u200f"],
  ["left-to-right isolate", "\u2066"],
  ["pop directional isolate", "\u2069"],
  ["zero-width space", "\u200b"],
  ["byte order mark", "\ufeff"],
  ["line separator", "\u2028"],
  ["language tag (outside the BMP)", "\u{e0001}"],
  ["escape (Cc)", "\u001b"],
] as const;

describe("holders and metadata are plain text", () => {
  it.each(HOSTILE)(
    "a holder with a %s is 400 naming holder, on acquire and on the raw PUT, and changes nothing",
    async (_, ch) => {
      const { api, call, snapshot } = harness();
      const name = "jobs/plain";
      // A lease already held, so a refusal that wrote anything would show.
      expect(
        (
          await call(
            "POST",
            path(name, "/acquire"),
            JSON.stringify({ holder: "pod-1", instance: INSTANCE, leaseMs: 60_000 }),
          )
        ).status,
      ).toBe(200);
      const before = await snapshot();
      const acquire = await call(
        "POST",
        path("jobs/other", "/acquire"),
        JSON.stringify({ holder: `${ch}1-dop`, instance: INSTANCE, leaseMs: 60_000 }),
      );
      expect(acquire.status).toBe(400);
      expect(acquire.body.errors).toContainEqual({ path: "holder", message: PLAIN_TEXT });
      const current = (await api.store.get(name))!;
      const put = await call(
        "PUT",
        path(name),
        JSON.stringify({ ...current.record, holder: `pod${ch}-1`, writeId: crypto.randomUUID() }),
        { "If-Match": `"${current.revision}"`, "Leasehold-Instance": INSTANCE },
      );
      expect(put.status).toBe(400);
      expect(put.body.errors).toContainEqual({ path: "holder", message: PLAIN_TEXT });
      expect(await snapshot()).toEqual(before);
    },
  );

  it.each(HOSTILE)(
    "metadata with a %s in a key or a value is 400 naming the key, and changes nothing",
    async (_, ch) => {
      const { call, snapshot } = harness();
      const before = await snapshot();
      const inValue = await call(
        "POST",
        path("jobs/meta", "/acquire"),
        JSON.stringify({ holder: "pod-1", instance: INSTANCE, leaseMs: 60_000, metadata: { addr: `10.0.0.7${ch}` } }),
      );
      expect(inValue.status).toBe(400);
      expect(inValue.body.errors).toContainEqual({ path: "metadata.addr", message: PLAIN_TEXT });
      const inKey = await call(
        "POST",
        path("jobs/meta", "/acquire"),
        JSON.stringify({ holder: "pod-1", instance: INSTANCE, leaseMs: 60_000, metadata: { [`a${ch}`]: "x" } }),
      );
      expect(inKey.status).toBe(400);
      expect(inKey.body.errors).toContainEqual({ path: `metadata.a${ch}`, message: `key: ${PLAIN_TEXT}` });
      expect(await snapshot()).toEqual(before);
    },
  );

  it("plain text of any script is taken as it is", async () => {
    const { call, api } = harness();
    const holder = "\u00e9t\u00e9-\u05e9\u05dc\u05d5\u05dd-\u{1F600} pod";
    const r = await call(
      "POST",
      path("jobs/scripts", "/acquire"),
      JSON.stringify({ holder, instance: INSTANCE, leaseMs: 60_000, metadata: { "r\u00e9gion": "\u6771\u4eac" } }),
    );
    expect(r.status).toBe(200);
    expect((await api.store.get("jobs/scripts"))!.record).toMatchObject({
      holder,
      metadata: { "r\u00e9gion": "\u6771\u4eac" },
    });
  });
});

describe("metadata keys that name a JavaScript object's machinery", () => {
  it.each(["__proto__", "constructor", "prototype"])(
    "metadata.%s is 400 naming the key, never dropped, and changes nothing",
    async (key) => {
      const { call, snapshot } = harness();
      const before = await snapshot();
      // As sent on the wire: JSON.stringify of an object literal cannot carry a "__proto__" key.
      const body = `{"holder":"pod-1","instance":"${INSTANCE}","leaseMs":60000,"metadata":{"${key}":"x","addr":"10.0.0.7"}}`;
      const r = await call("POST", path("jobs/proto", "/acquire"), body);
      expect(r.status).toBe(400);
      expect(r.body.errors?.map((e) => e.path)).toEqual([`metadata.${key}`]);
      expect(r.body.errors?.[0]?.message).toContain(`"${key}"`);
      expect(await snapshot()).toEqual(before);
    },
  );

  it("a key __proto__ anywhere in a body is refused, naming where", async () => {
    const { call, snapshot } = harness();
    const r = await call(
      "POST",
      path("jobs/proto", "/acquire"),
      `{"holder":"pod-1","instance":"${INSTANCE}","leaseMs":60000,"__proto__":{"x":"y"}}`,
    );
    expect(r.status).toBe(400);
    expect(r.body.errors).toEqual([
      { path: "__proto__", message: 'expected no key "__proto__" (no JavaScript object keeps it as data)' },
    ]);
    expect(await snapshot()).toEqual([]);
  });
});
