/**
 * A listing with corrupt records in it (issue #30, item 2), through the API in process
 * (`app.request`: the server's work, no sockets) on a SQLite file: one page of a prefix of 1,000
 * records, clean, and the same prefix with 1 and with 10 of its records overwritten in the
 * database by bytes no store can read (alternately not JSON, and JSON with a field out of range).
 * Each page is checked: answered 200 with every good record, a row of its own for each bad one,
 * and no next page. Beside it, the code at the issue's commit (bench/support/before.ts) on its own
 * SQLite store, whose listing failed as a whole. The three prefixes are listed in turn, call by
 * call, so a change in machine load meets all of them.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import type { TokenScope } from "../src/api/auth.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import type { LeaseStore } from "../src/lease.js";
import { beforeSources, ISSUE_30_COMMIT } from "./support/before.js";
import { benchRecord, machineLoad, QUICK, tempDir } from "./support/common.js";
import { median, quantile, type Table } from "./table.js";

const RECORDS = 1000;
const PAGES = QUICK ? 20 : 200;
const TOKEN: TokenScope = { name: "ops", token: "ops-token-0123456789abcdef", prefixes: [""], verbs: ["read"] };

interface App {
  request(path: string, init: RequestInit): Response | Promise<Response>;
}
type CreateApp = (options: { store: LeaseStore; auth: { tokens: TokenScope[] } }) => App;
interface Code {
  label: string;
  createApp: CreateApp;
  sqlite: (path: string) => LeaseStore & { close(): Promise<void> };
}

/** The code before, from git (undefined when this clone lacks the commit). */
async function beforeCode(): Promise<Code | undefined> {
  const src = beforeSources(ISSUE_30_COMMIT);
  if (!src) return undefined;
  const { createApp } = (await import(join(src, "api", "app.ts"))) as { createApp: CreateApp };
  const { SqliteStore: Before } = (await import(join(src, "stores", "sqlite.ts"))) as {
    SqliteStore: typeof SqliteStore;
  };
  return { label: `before (${ISSUE_30_COMMIT})`, createApp, sqlite: (path) => new Before({ path }) };
}

/** The prefixes listed: how many of their 1,000 records are corrupt. */
const CASES = [
  { prefix: "clean/", corrupt: 0 },
  { prefix: "one/", corrupt: 1 },
  { prefix: "ten/", corrupt: 10 },
] as const;

const nameOf = (prefix: string, i: number) => `${prefix}r${String(i).padStart(4, "0")}`;

/** The records of `prefix` overwritten with bad bytes: spread over the page. */
function corruptNames(prefix: string, corrupt: number): string[] {
  return Array.from({ length: corrupt }, (_, k) => nameOf(prefix, Math.floor(((k + 0.5) * RECORDS) / corrupt)));
}

/** Each case's 1,000 records written past the store (one transaction), then its bad ones overwritten. */
async function seed(path: string): Promise<void> {
  await new SqliteStore({ path }).close();
  const db = new Database(path);
  const upsert = db.prepare(
    "INSERT INTO leases (name, rev, record) VALUES (?, 1, ?) ON CONFLICT (name) DO UPDATE SET rev = rev + 1, record = excluded.record",
  );
  db.transaction(() => {
    for (const { prefix, corrupt } of CASES) {
      for (let i = 0; i < RECORDS; i++) upsert.run(nameOf(prefix, i), JSON.stringify(benchRecord(nameOf(prefix, i))));
      corruptNames(prefix, corrupt).forEach((name, k) => {
        // What a foreign tool or a bad migration leaves: not JSON, or JSON with a field out of range.
        upsert.run(name, k % 2 === 0 ? '{"name": "not json' : JSON.stringify({ ...benchRecord(name), term: -1 }));
      });
    }
  })();
  db.close();
}

interface Page {
  status: number;
  leases: string[];
  unreadable: string[];
  next: string | null;
}

async function listPage(app: App, prefix: string): Promise<Page> {
  const res = await app.request(`/v1/leases?prefix=${encodeURIComponent(prefix)}&limit=${RECORDS}`, {
    headers: { Authorization: `Bearer ${TOKEN.token}` },
  });
  const body = (await res.json()) as {
    leases?: Array<{ name: string }>;
    unreadable?: Array<{ name: string }>;
    next?: string | null;
  };
  return {
    status: res.status,
    leases: (body.leases ?? []).map((l) => l.name),
    unreadable: (body.unreadable ?? []).map((u) => u.name),
    next: body.next ?? null,
  };
}

/** What the page holds against what the prefix holds. */
function verdict(page: Page, prefix: string, corrupt: number): string {
  if (page.status !== 200) return `answered ${page.status}: no record listed`;
  const bad = corruptNames(prefix, corrupt);
  const good = Array.from({ length: RECORDS }, (_, i) => nameOf(prefix, i)).filter((n) => !bad.includes(n));
  const whole =
    JSON.stringify(page.leases) === JSON.stringify(good) &&
    JSON.stringify(page.unreadable) === JSON.stringify(bad) &&
    page.next === null;
  return `${whole ? "whole" : "NOT WHOLE"}: ${page.leases.length} good + ${page.unreadable.length} unreadable rows, next ${page.next ?? "none"}`;
}

export async function run(): Promise<Table[]> {
  const { createApp } = await import("../src/api/app.js");
  const after: Code = {
    label: "after",
    createApp: createApp as unknown as CreateApp,
    sqlite: (path) => new SqliteStore({ path }),
  };
  const before = await beforeCode();
  const tmp = tempDir("corrupt-listing");
  const rows: Table["rows"] = [];
  try {
    for (const code of [before, after]) {
      if (!code) {
        rows.push([`before (${ISSUE_30_COMMIT})`, "", "not measured: this clone lacks the commit", "", "", "", ""]);
        continue;
      }
      const path = tmp.path(`${code.label.slice(0, 5)}.db`);
      await seed(path);
      const store = code.sqlite(path);
      const app = code.createApp({ store, auth: { tokens: [TOKEN] } });
      for (let i = 0; i < 3; i++) for (const c of CASES) await listPage(app, c.prefix);
      const ms = CASES.map(() => [] as number[]);
      const last: Page[] = [];
      for (let i = 0; i < PAGES; i++) {
        for (const [k, c] of CASES.entries()) {
          const t0 = performance.now();
          last[k] = await listPage(app, c.prefix);
          ms[k]!.push(performance.now() - t0);
        }
      }
      const load = machineLoad();
      const clean = median(ms[0]!);
      for (const [k, c] of CASES.entries()) {
        rows.push([
          code.label,
          `${RECORDS - c.corrupt} + ${c.corrupt} corrupt`,
          verdict(last[k]!, c.prefix, c.corrupt),
          PAGES,
          `${median(ms[k]!).toFixed(2)} / ${quantile(ms[k]!, 0.99).toFixed(2)}`,
          `${(median(ms[k]!) / clean).toFixed(2)}x`,
          load,
        ]);
      }
      await store.close();
    }
  } finally {
    tmp.remove();
  }
  return [
    {
      title: "One listing page with corrupt records in it (SQLite, in process)",
      note: `A prefix of ${RECORDS} records, listed as one page (limit=${RECORDS}) through createApp's app.request (no sockets) with a read token: clean, and with 1 and 10 records overwritten in the database (not JSON / a term of -1, alternately). The three listed in turn, ${PAGES} times each. Whole: 200 with every good record, one row for each bad one, no next page. Before: the code at ${ISSUE_30_COMMIT} on its own SQLite store. ms per page, median / p99.`,
      columns: ["code", "records", "the page", "pages", "listing ms", "vs clean", "load"],
      rows,
    },
  ];
}
