/**
 * The command the scheduled-job process tests run (under `leasehold cron`, or from a `runFire`
 * worker): it appends to one shared log a "start" line, a "tick" every 20 ms while it works, and an
 * "end" line, each stamped with its term, fire and the system's CLOCK_MONOTONIC (the same clock in
 * every process of the machine, whatever libfaketime does to the wall clock):
 *   "<term> <monotonic ns> <identity> <fire ISO> <pid> <ppid> <start|tick|sigterm|end>"
 * Each line is one short append (O_APPEND), so the file's order is the order the writes happened.
 * Run with `node -e` (no loader); argv after "--": LOG, WORK_MS, ON_SIGTERM ("exit" or "ignore").
 */
import { existsSync, readFileSync } from "node:fs";
import type { WriterLine } from "./term-writer.js";

const FIRE_WRITER_SOURCE = `
const { appendFileSync } = require("node:fs");
const [log, workMs, onTerm] = process.argv.slice(1);
const term = process.env.LEASEHOLD_TERM;
const fire = process.env.LEASEHOLD_FIRE;
const identity = process.env.LEASEHOLD_IDENTITY;
const line = (event) =>
  appendFileSync(log, term + " " + process.hrtime.bigint() + " " + identity + " " + fire + " " + process.pid + " " + process.ppid + " " + event + "\\n");
line("start");
process.on("SIGTERM", () => {
  line("sigterm");
  if (onTerm === "exit") process.exit(0);
});
const tick = setInterval(() => line("tick"), 20);
setTimeout(() => {
  clearInterval(tick);
  line("end");
  process.exit(0);
}, Number(workMs));
`;

export function fireWriterCommand(log: string, workMs: number, onSigterm: "exit" | "ignore" = "exit"): string[] {
  return [process.execPath, "-e", FIRE_WRITER_SOURCE, "--", log, String(workMs), onSigterm];
}

export interface FireLine extends WriterLine {
  /** The fire the line's run was for (epoch ms). */
  fire: number;
}

export function readFireLog(path: string): FireLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => /(start|tick|sigterm|end)$/.test(l))
    .map((l, seq) => {
      const [term, at, identity, fire, pid, ppid, event] = l.split(" ");
      return {
        seq,
        term: Number(term),
        at: BigInt(at ?? "0"),
        identity: identity ?? "",
        fire: Date.parse(fire ?? ""),
        role: "command" as const,
        pid: Number(pid),
        ppid: Number(ppid),
        event: event ?? "",
      };
    });
}

/** The fires each `leasehold cron` (or runFire worker) reported missed, from its stderr lines. */
export function missedFires(stderr: string): Array<{ fire: number; reason: string }> {
  const out: Array<{ fire: number; reason: string }> = [];
  for (const match of stderr.matchAll(/missed \d+\+? fires? \((\w+)\): ([^\n]*)/g)) {
    for (const iso of match[2]!.split(" ")) out.push({ fire: Date.parse(iso), reason: match[1]! });
  }
  return out;
}

/** The fires whose command `leasehold cron` reported it could not start in time (a loaded machine). */
export function notStartedFires(stderr: string): Array<{ fire: number; reason: string }> {
  return [...stderr.matchAll(/fire (\S+): command was not started/g)].map((m) => ({
    fire: Date.parse(m[1]!),
    reason: "not-started",
  }));
}
