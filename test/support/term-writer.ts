/**
 * The command the guard tests run under `leasehold run`: it appends one line to a shared log every
 * 20 ms, stamped with its term and the system's CLOCK_MONOTONIC (`process.hrtime.bigint()`, the same
 * clock in every process on the machine):
 *   "<term> <monotonic ns> <identity> <command|child> <pid> <ppid> <start|tick|sigterm>"
 * Each line is one short append (O_APPEND), so the file's order is the order the writes happened.
 * Run with `node -e` (no loader: it starts in tens of ms); argv after "--": LOG, ON_SIGTERM
 * ("exit" or "ignore"), CHILD ("child": also start a second writer in the same process group, so
 * the test sees whether a kill reaches the command's children, or "none").
 */
import { existsSync, readFileSync } from "node:fs";

const WRITER_SOURCE = `
const { appendFileSync } = require("node:fs");
const { spawn } = require("node:child_process");
const [log, onTerm, withChild] = process.argv.slice(1);
const term = process.env.LEASEHOLD_TERM;
const identity = process.env.LEASEHOLD_IDENTITY;
const role = process.env.TERM_WRITER_ROLE || "command";
const line = (event) =>
  appendFileSync(log, term + " " + process.hrtime.bigint() + " " + identity + " " + role + " " + process.pid + " " + process.ppid + " " + event + "\\n");
line("start");
process.on("SIGTERM", () => {
  line("sigterm");
  if (onTerm === "exit") process.exit(0);
});
if (withChild === "child") {
  spawn(process.execPath, [...process.execArgv, "--", log, onTerm, "none"], {
    stdio: "ignore",
    env: { ...process.env, TERM_WRITER_ROLE: "child" },
  });
}
setInterval(() => line("tick"), 20);
`;

export interface WriterOptions {
  onSigterm: "exit" | "ignore";
  child: boolean;
}

export function writerCommand(log: string, o: WriterOptions): string[] {
  return [process.execPath, "-e", WRITER_SOURCE, "--", log, o.onSigterm, o.child ? "child" : "none"];
}

export interface WriterLine {
  /** Position in the file: the order the writes happened. */
  seq: number;
  term: number;
  /** CLOCK_MONOTONIC nanoseconds, read just before the write. */
  at: bigint;
  identity: string;
  role: "command" | "child";
  pid: number;
  ppid: number;
  event: string;
}

export function readWriterLog(path: string): WriterLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.endsWith("start") || l.endsWith("tick") || l.endsWith("sigterm"))
    .map((l, seq) => {
      const [term, at, identity, role, pid, ppid, event] = l.split(" ");
      return {
        seq,
        term: Number(term),
        at: BigInt(at ?? "0"),
        identity: identity ?? "",
        role: role === "child" ? "child" : "command",
        pid: Number(pid),
        ppid: Number(ppid),
        event: event ?? "",
      };
    });
}

/**
 * "No line of term T is written after the first line of any term above T", checked twice: by the
 * file's order (exact: O_APPEND writes are serialised) and by the monotonic stamps. Returns one
 * message per pair of terms that overlapped, with how much.
 */
export function termOverlaps(lines: WriterLine[]): string[] {
  const firstOf = new Map<number, WriterLine>();
  const lastOf = new Map<number, WriterLine>();
  for (const l of lines) {
    const first = firstOf.get(l.term);
    if (!first || l.at < first.at) firstOf.set(l.term, l);
    const last = lastOf.get(l.term);
    if (!last || l.seq > last.seq) lastOf.set(l.term, l);
  }
  const violations: string[] = [];
  for (const [term, last] of lastOf) {
    for (const [later, first] of firstOf) {
      if (later <= term) continue;
      const late = lines.filter((l) => l.term === term && l.seq > first.seq);
      if (late.length > 0) {
        const pids = [...new Set(late.map((l) => `${l.role} ${l.pid}`))].join(", ");
        violations.push(
          `file order: term ${term} (${last.identity}: ${pids}) wrote ${late.length} lines after term ${later}'s first (line ${first.seq}), the last at line ${last.seq}`,
        );
      }
      const lastAt = lines.filter((l) => l.term === term).reduce((a, b) => (b.at > a.at ? b : a)).at;
      if (lastAt >= first.at) {
        violations.push(
          `clock: term ${term} (${last.identity}) wrote until ${(Number(lastAt - first.at) / 1e6).toFixed(1)} ms after term ${later}'s first line`,
        );
      }
    }
  }
  return violations;
}
