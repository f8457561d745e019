/**
 * Holders' renewals on time while 1,100 slow clients from another address press on the server
 * (issue #30, item 5). The API runs as `npm start` runs it, in its own process, with its defaults,
 * on SQLite: before, the code at the issue's commit (no per-address bound; a client answered 408
 * keeps its half-closed socket); after, this code (256 connections per address, an answered
 * client destroyed a second later). The slow clients (test/support/slow-clients.ts) run in a
 * process of their own from 127.0.0.2, each trickling a header byte every 200 ms for ever and
 * connecting again 100 ms after the server closes it; they never close a connection themselves.
 * The holders (this process) renew 20 leases from 127.0.0.1 every second each, each renewal on a
 * fresh connection, for PHASE_MS without the slow clients and PHASE_MS with them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { type EntryProcess, startEntry } from "../test/support/entry-process.js";
import { acquireAll, type Renewal, renewAll } from "../test/support/holders.js";
import { stopProcess } from "../test/support/server-process.js";
import { beforeSources, ISSUE_30_COMMIT } from "./support/before.js";
import { machineLoad, QUICK, tempDir } from "./support/common.js";
import { median, quantile, type Table } from "./table.js";

const SLOW_CLIENTS = 1100;
const LEASES = 20;
const EVERY_MS = 1000;
const LEASE_MS = 3000;
const PHASE_MS = QUICK ? 5000 : 30_000;

/** Starts the slow clients against `port`; resolves once every one has connected at least once. */
async function slowClients(port: number): Promise<{ child: ChildProcess; last: () => string }> {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(import.meta.dirname, "..", "test", "support", "slow-clients.ts"),
      String(port),
      String(SLOW_CLIENTS),
      "127.0.0.2",
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let last = "{}";
  let buffer = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split("\n");
    buffer = lines.pop() ?? "";
    if (lines.length > 0) last = lines.at(-1)!;
  });
  const started = performance.now();
  while ((JSON.parse(last) as { connects?: number }).connects! < SLOW_CLIENTS || last === "{}") {
    if (performance.now() - started > 60_000) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, last: () => last };
}

function summary(renewals: Renewal[]) {
  const onTime = renewals.filter((r) => r.status === 200 && r.doneAt - r.sentAt <= EVERY_MS).length;
  const late = renewals.filter((r) => r.status === 200 && r.doneAt - r.sentAt > EVERY_MS).length;
  const refused = renewals.filter((r) => r.status === 503).length;
  // Anything else: another status (409: the term was lost) or no answer at all.
  const failed = renewals.length - onTime - late - refused;
  // A lease is lost when no renewal of it was answered 200 for longer than its lease.
  let lost = 0;
  const byLease = new Map<string, Renewal[]>();
  for (const r of renewals) byLease.set(r.lease, [...(byLease.get(r.lease) ?? []), r]);
  for (const list of byLease.values()) {
    let lastGood = list[0]?.sentAt ?? 0;
    for (const r of list) {
      if (r.status !== 200) continue;
      if (r.sentAt - lastGood > LEASE_MS) lost++;
      lastGood = r.sentAt;
    }
  }
  const answered = renewals.filter((r) => r.status === 200).map((r) => r.doneAt - r.sentAt);
  return { onTime, late, refused, failed, lost, answered };
}

const holding = { leaseMs: LEASE_MS, from: "127.0.0.1" };
const leasesOf = (prefix: string) => Array.from({ length: LEASES }, (_, i) => `${prefix}/lease-${i}`);

/** Renews the leases of `terms` for PHASE_MS: one row. */
async function phase(api: EntryProcess, label: string, terms: Map<string, number>): Promise<Array<string | number>> {
  const end = performance.now() + PHASE_MS;
  const renewals = await renewAll(api.url, terms, {
    ...holding,
    everyMs: EVERY_MS,
    until: () => performance.now() > end,
  });
  const s = summary(renewals);
  return [
    label,
    renewals.length,
    `${s.onTime} (${((100 * s.onTime) / Math.max(1, renewals.length)).toFixed(1)} %)`,
    s.late,
    s.refused,
    s.failed,
    s.lost,
    s.answered.length ? `${median(s.answered).toFixed(0)} / ${quantile(s.answered, 0.99).toFixed(0)}` : "-",
    machineLoad(),
  ];
}

export async function run(): Promise<Table[]> {
  const tmp = tempDir("slow-clients");
  const rows: Table["rows"] = [];
  const slowAnswers: string[] = [];
  try {
    const trees: Array<[string, string | undefined]> = [
      [`before (${ISSUE_30_COMMIT})`, beforeSources(ISSUE_30_COMMIT)],
      ["after", join(import.meta.dirname, "..", "src")],
    ];
    for (const [code, src] of trees) {
      if (!src) {
        rows.push([code, "not measured: this clone lacks the commit", "", "", "", "", "", "", "", ""]);
        continue;
      }
      const api = await startEntry(src, tmp.path(`${code.slice(0, 5)}.db`));
      try {
        rows.push([
          code,
          ...(await phase(api, "no slow clients", await acquireAll(api.url, leasesOf("quiet"), holding))),
        ]);
        // Taken once every slow client has connected (which can take longer than a lease), so the
        // renewals measured continue live terms; a take refused under the attack is the row.
        const slow = await slowClients(api.port);
        try {
          const label = `${SLOW_CLIENTS} slow clients from 127.0.0.2`;
          const pressed = await acquireAll(api.url, leasesOf("pressed"), holding).catch((e: Error) => e);
          if (pressed instanceof Error)
            rows.push([
              code,
              label,
              `acquire refused: ${pressed.message.slice(0, 80)}`,
              "",
              "",
              "",
              "",
              "",
              "",
              machineLoad(),
            ]);
          else rows.push([code, ...(await phase(api, label, pressed))]);
        } finally {
          await stopProcess(slow.child);
          slowAnswers.push(`${code}: ${slow.last()}`);
        }
      } finally {
        await api.stop();
      }
    }
  } finally {
    tmp.remove();
  }
  return [
    {
      title: "Holders' renewals under 1,100 slow clients from another address (the API's own process, defaults)",
      note: `${LEASES} leases renewed every ${EVERY_MS} ms each (leaseMs ${LEASE_MS}), each renewal on a fresh connection from 127.0.0.1, for ${PHASE_MS / 1000} s per phase. On time: answered 200 within ${EVERY_MS} ms (before the next renewal is due). Lost: a lease with no renewal answered 200 for longer than leaseMs. The slow clients' last report (open, connects, closes by the server, answers by status and bound): ${slowAnswers.join("; ")}`,
      columns: [
        "code",
        "phase",
        "renewals",
        "on time",
        "200 late",
        "503",
        "other status or no answer",
        "leases lost",
        "answered ms p50 / p99",
        "load",
      ],
      rows,
    },
  ];
}
