/**
 * `leasehold status [PREFIX]`: every lease under a prefix, as a table or JSON.
 * `leasehold status --group NAME`: a sharded group's count, members, buckets, owners, terms and
 * the target assignment (src/sharding/group-status.ts), from one listing of `<group>/`.
 */
import { validatePrefix } from "../lease.js";
import { isUnreadable } from "../listing.js";
import { openStore } from "../open-store.js";
import { type GroupStatus, groupStatus } from "../sharding/group-status.js";
import { configName, validateGroup } from "../sharding/layout.js";
import {
  type CliIo,
  describeExpiry,
  EXIT_RUNTIME,
  formatDuration,
  formatTable,
  type LeaseStatus,
  statusOf,
  type UnreadableView,
  unreadableViewOf,
} from "./output.js";

export interface StatusOptions {
  store: string;
  prefix: string;
  /** A sharded group's name instead of a prefix. */
  group?: string | undefined;
  json: boolean;
}

export async function statusCommand(o: StatusOptions, io: CliIo): Promise<number> {
  const group = o.group === undefined ? undefined : validateGroup(o.group, "--group");
  const prefix = group === undefined ? validatePrefix(o.prefix) : `${group}/`;
  // Read-only: a store that does not exist yet is an error, never a new empty database.
  const store = await openStore(o.store, { env: io.env, create: false });
  try {
    if (!store.list) throw new Error(`the store ${o.store} cannot list leases`);
    const now = Date.now();
    if (group !== undefined) {
      const records = [];
      for await (const entry of store.list(prefix)) {
        // A group's status is judged from the records that read; each one that does not is named.
        if (isUnreadable(entry)) io.say(`skipped an unreadable record: ${entry.unreadable.message}`);
        else records.push(entry);
      }
      const status = groupStatus(group, records, now);
      if (!status) {
        const config = records.find((s) => s.record.name === configName(group));
        io.say(
          config
            ? `the config record "${configName(group)}" is unreadable: expected metadata buckets (1-4096), epoch and previous as whole numbers`
            : `no group "${group}": its config record "${configName(group)}" does not exist`,
        );
        return EXIT_RUNTIME;
      }
      if (o.json) io.out(JSON.stringify(status));
      else for (const line of groupTable(status, now)) io.out(line);
      return 0;
    }
    // One bad record is a row of its own, never the whole listing's failure.
    const views: Array<LeaseStatus | UnreadableView> = [];
    for await (const entry of store.list(prefix)) {
      views.push(isUnreadable(entry) ? unreadableViewOf(entry) : statusOf(entry, now));
    }
    if (o.json) {
      io.out(JSON.stringify(views));
    } else if (views.length === 0) {
      io.say(prefix === "" ? "no leases" : `no leases under "${prefix}"`);
    } else {
      const rows = views.map((v) =>
        v.state === "unreadable"
          ? [
              v.name,
              "-",
              "-",
              `UNREADABLE: ${v.errors.length === 0 ? v.detail : v.errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join("; ")}`,
            ]
          : [v.name, v.holder ?? "-", String(v.term), describeExpiry(v)],
      );
      for (const line of formatTable(["LEASE", "HOLDER", "TERM", "EXPIRES IN"], rows)) io.out(line);
    }
    return 0;
  } finally {
    await store.close?.();
  }
}

/** A summary line, the members, a blank line, the buckets. */
function groupTable(s: GroupStatus, now: number): string[] {
  const live = s.members.filter((m) => m.state === "live").length;
  const summary =
    `group ${s.group}: ${s.config.buckets} buckets (epoch ${s.config.epoch}), ${live} live member${live === 1 ? "" : "s"}, ` +
    `${s.unowned} unowned, ${s.balanced ? "balanced" : "not balanced"}`;
  const members = s.members.map((m) => [
    m.id,
    String(m.session),
    m.state === "fenced" ? `fenced by ${m.fencedBy}` : m.state,
    String(m.held),
    m.state === "live" ? String(m.target) : "-",
    m.wants.length === 0 ? "-" : m.wants.join(","),
    m.expiresAt === null
      ? "-"
      : m.expiresAt > now
        ? formatDuration(m.expiresAt - now)
        : `expired ${formatDuration(now - m.expiresAt)} ago`,
  ]);
  const buckets = s.buckets.map((b) => [String(b.bucket), b.owner ?? "-", String(b.term), b.state, b.target ?? "-"]);
  return [
    summary,
    ...(members.length === 0
      ? ["no members"]
      : formatTable(["MEMBER", "SESSION", "STATE", "HELD", "TARGET", "WANTS", "EXPIRES IN"], members)),
    "",
    ...formatTable(["BUCKET", "OWNER", "TERM", "STATE", "TARGET"], buckets),
  ];
}
