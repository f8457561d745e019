/**
 * The stateless lease routes (docs/design.md §5): acquire, renew and release, judged by the
 * server's clock and the holding rules of src/api/lease-service.ts, and the reads, get and list.
 * A bucket of a sharded group is shown with its owner's session's expiry. Runtime-neutral.
 */
import type { Context } from "hono";
import { recordRole, validatePrefix, validateRecordName } from "../../lease.js";
import { type Listed, listedName } from "../../listing.js";
import { type Api, callerOf, type Deps, type Env, etagOf } from "../context.js";
import { groupShape } from "../group-records.js";
import type { LeaseOutcome } from "../lease-service.js";
import { unreadableProblem } from "../lease-views.js";
import { listingScoped, scoped, wellFormed } from "../middleware.js";
import { ProblemError } from "../problems.js";
import { isQuotaRecord, refuseServerName } from "../quota-records.js";

/** Any record's name (a lease's or a protocol record's) but the server's own counts: what reads take. */
export const recordName = (c: Context) => refuseServerName(validateRecordName(c.req.param("name")));
/**
 * What the raw PUT takes: a lease, or a process session record (the HTTP store writes its
 * session there); a sharded group's records only through the group routes (409 `group-record`).
 */
export const writableName = (c: Context) => refuseGroupRecord(recordName(c));
/**
 * The lease name of a lease route's path (acquire, renew, release, force-release's lease): a
 * protocol record's name is well formed but no lease, so it is refused 409 before anything is
 * read: `group-record` naming the group's routes, or `protocol-record` for a process session.
 */
export const leaseName = (c: Context) => {
  const name = refuseGroupRecord(recordName(c));
  if (recordRole(name) === "lease") return name;
  throw new ProblemError(
    "protocol-record",
    `"${name}" is a process session record, no lease: only its process writes it (PUT, by the session that holds it)`,
  );
};

function refuseGroupRecord(name: string): string {
  const shape = recordRole(name) === "lease" ? undefined : groupShape(name);
  if (!shape) return name;
  const route = `/v1/groups/${encodeURIComponent(shape.group)}/members/{member}`;
  throw new ProblemError(
    "group-record",
    `"${name}" is the ${shape.kind} record of the sharded group "${shape.group}": only its group routes write it (POST ${route}/heartbeat, /handoff, /leave)`,
    { group: shape.group },
  );
}
/** The `prefix` query of a listing (or of a stream of one), validated. */
export const queryPrefix = (c: Context) => validatePrefix(c.req.query("prefix") ?? "");

export function registerLeaseRoutes(app: Api, deps: Deps): void {
  const { routes, service, views } = deps;
  const write = [scoped(deps, "write", leaseName), wellFormed];
  const result = async (c: Context<Env>, outcome: LeaseOutcome) =>
    c.json({ leader: outcome.leader, lease: await views.view(outcome.stored) }, 200, {
      ETag: etagOf(outcome.stored),
    });

  app.openapi({ ...routes.acquire, middleware: write }, async (c) => {
    const name = leaseName(c);
    return result(c, await service.acquire(name, c.req.valid("json"), callerOf(deps, c, name)));
  });

  app.openapi({ ...routes.renew, middleware: write }, async (c) => {
    const name = leaseName(c);
    return result(c, await service.renew(name, c.req.valid("json"), callerOf(deps, c, name)));
  });

  app.openapi({ ...routes.release, middleware: write }, async (c) => {
    const name = leaseName(c);
    return result(c, await service.release(name, c.req.valid("json"), callerOf(deps, c, name)));
  });

  app.openapi({ ...routes.forceRelease, middleware: [scoped(deps, "force", recordName), wellFormed] }, async (c) => {
    const name = recordName(c);
    const { term } = c.req.valid("json");
    const { stored } = await deps.forceRelease.clear(name, term, callerOf(deps, c, name).by);
    return c.json({ leader: false, lease: await views.view(stored) }, 200, { ETag: etagOf(stored) });
  });

  app.openapi({ ...routes.get, middleware: [scoped(deps, "read", recordName)] }, async (c) => {
    const name = recordName(c);
    const stored = await service.get(name);
    if (!stored) throw new ProblemError("not-found", `lease "${name}" does not exist`);
    const row = await views.row(stored);
    if ("unreadable" in row) throw unreadableProblem(row.unreadable);
    return c.json(row.lease, 200, { ETag: etagOf(stored) });
  });

  app.openapi({ ...routes.list, middleware: [listingScoped(deps, queryPrefix)] }, async (c) => {
    const query = c.req.valid("query");
    const limit = Math.min(query.limit ?? 100, deps.options.listLimit);
    const found: Listed[] = [];
    for await (const entry of service.list(query.prefix ?? "", query.cursor, limit + 1)) found.push(entry);
    const page = found.slice(0, limit);
    // One read per group config and owner for the page's buckets, however many buckets it lists.
    // A record the server cannot read or judge is a row of its own: the rest of the page is served.
    const cache = new Map();
    // The server's own records (quota counts) are no caller's: never shown, though they count as listed.
    const shown = page.filter((entry) => !isQuotaRecord(listedName(entry)));
    const rows = await Promise.all(shown.map((entry) => views.row(entry, cache)));
    const leases = rows.flatMap((r) => ("lease" in r ? [r.lease] : []));
    const unreadable = rows.flatMap((r) => ("unreadable" in r ? [r.unreadable] : []));
    const last = page.at(-1);
    const next = found.length > limit && last ? listedName(last) : null;
    return c.json({ leases, unreadable, next }, 200);
  });
}
