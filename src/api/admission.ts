/**
 * Renewals first (docs/design.md §5, "Admission"): a server under more load than it can serve
 * keeps serving the requests that keep leases alive, and refuses the rest before they cost
 * anything. A lease that is lost because its renewal waited behind other work becomes an
 * acquisition, which adds work: refusing acquisitions first breaks that loop.
 *
 * Every /v1 request is in one of three lanes, known before anything is read from the store:
 * - `holder`: what only a current holder sends, by its route (and, for a heartbeat, its body):
 *   renew, release, a member heartbeat that names its session, a hand-off confirmation, a leave.
 * - `renewal`: acquire and the raw PUT with If-Match (the HTTP store's elector renews by PUT),
 *   when the lease's holder and term this instance last saw (`Holdings`: every record it read,
 *   wrote or was pushed) say the request continues a current term: acquire by the lease's holder,
 *   a PUT of the holder's own term. The lease service checks it after its read: admitted on the
 *   reserved share, such a request that does not renew a live term of its own process is refused
 *   there, before anything is written (`Caller.renewalsOnly`). An instance that has not seen the
 *   lease yet takes the request for an acquisition until it has.
 * - `other`: acquisitions, reads, lists, watches and the console's routes.
 *
 * Bounds: at most `inFlight` requests at once, of which `reservedInFlight` only for the first two
 * lanes. An `other` request is refused 503 `over-capacity` with Retry-After when the server is
 * late (its event loop more than `lateMs` behind: bound `lateMs`) and another such request is in
 * flight already (one at a time goes on, so a takeover of a dead holder's lease still makes
 * progress through a long overload), then when the unreserved share is in use (bound `inFlight`);
 * a holder's request only when all of `inFlight` is. A watch stream
 * counts while its request is answered, not while it streams (streams have their own bounds,
 * src/api/limits.ts). Counters live in this instance's memory.
 *
 * Per instance: the Node entries turn it on (src/runtime/node.ts); a Lambda instance serves one
 * request at a time and a Worker's isolates come and go with load, so there these bounds would
 * mean nothing and their variables are refused (src/api/config/policy.ts). Runtime-neutral.
 */
import type { Stored } from "../lease.js";
import { ProblemError } from "./problems.js";

export type Lane = "holder" | "renewal" | "other";

export interface AdmissionBounds {
  /** Requests this instance serves at once. */
  inFlight: number;
  /** Of `inFlight`, how many only current holders' requests may use. */
  reservedInFlight: number;
  /** Event-loop lateness (ms) past which only current holders' requests are served. */
  lateMs: number;
}

/** What a refusal adds to the metrics: the bound and the lane. */
export type RefusalListener = (bound: "inFlight" | "lateMs", lane: Lane) => void;

/** An admitted request: `done` when it is answered; `renewalsOnly` as for `Caller.renewalsOnly`. */
export interface Ticket {
  done(): void;
  renewalsOnly: ProblemError | undefined;
}

export class Admission {
  private open = 0;
  /** Of `open`, those admitted as anyone's (not on the holders' say-so). */
  private others = 0;
  /** What this instance last saw held (fed by createApp from the watch hub's observers). */
  readonly holdings = new Holdings();

  constructor(
    readonly bounds: AdmissionBounds,
    /** How late the event loop is now, in ms (src/elector/lateness.ts). */
    private readonly lateness: () => number,
    private readonly refused: RefusalListener = () => undefined,
  ) {}

  /** Requests admitted and not yet answered. */
  get inFlight(): number {
    return this.open;
  }

  /** Admits a request of `lane`, or throws 503 `over-capacity` naming the bound. */
  admit(lane: Lane): Ticket {
    const refusal = this.refusalOfOther();
    if (lane === "other" || refusal === undefined) {
      if (refusal) {
        this.refused(refusal.extra.bound as "inFlight" | "lateMs", lane);
        throw refusal;
      }
      return this.ticket(undefined, true);
    }
    if (this.open >= this.bounds.inFlight) {
      this.refused("inFlight", lane);
      throw overCapacity(
        "inFlight",
        `this server has ${this.open} requests in flight, the most it serves (inFlight ${this.bounds.inFlight}); retry later`,
      );
    }
    return this.ticket(lane === "renewal" ? refusal : undefined, false);
  }

  /** Why a request that is not a current holder's would be refused now, if it would. */
  private refusalOfOther(): ProblemError | undefined {
    const late = this.lateness();
    // While late, one such request at a time still goes through: a follower's takeover of a lease
    // whose holder died must not wait for the load to end, only behind the holders.
    if (late > this.bounds.lateMs && this.others >= LATE_OTHERS) {
      return overCapacity(
        "lateMs",
        `this server is ${Math.round(late)} ms late (lateMs ${this.bounds.lateMs}): it serves current holders' renewals and member heartbeats first; retry after Retry-After`,
      );
    }
    const unreserved = this.bounds.inFlight - this.bounds.reservedInFlight;
    if (this.open >= unreserved) {
      return overCapacity(
        "inFlight",
        `this server has ${this.open} requests in flight, the most it serves but for current holders' renewals (inFlight ${this.bounds.inFlight}, of which reservedInFlight ${this.bounds.reservedInFlight} are kept for them); retry after Retry-After`,
      );
    }
    return undefined;
  }

  private ticket(renewalsOnly: ProblemError | undefined, other: boolean): Ticket {
    this.open++;
    if (other) this.others++;
    let open = true;
    return {
      renewalsOnly,
      done: () => {
        if (!open) return;
        open = false;
        this.open--;
        if (other) this.others--;
      },
    };
  }
}

/** Requests that are not a holder's served at once while the server is late. */
const LATE_OTHERS = 1;

function overCapacity(bound: "inFlight" | "lateMs", detail: string): ProblemError {
  return new ProblemError("over-capacity", detail, { bound, retryAfter: 1 });
}

/**
 * The holder and term of each lease this instance last saw held: what tells a renewal sent as
 * acquire or PUT from an acquisition without reading the store. Fed with every record the
 * instance reads, writes or is pushed (WatchHub.observe); at most HOLDINGS_REMEMBERED leases, the
 * one seen least recently forgotten first.
 */
export class Holdings {
  static readonly REMEMBERED = 100_000;
  private readonly held = new Map<string, { holder: string; term: number }>();

  note(name: string, stored: Stored | null): void {
    this.held.delete(name);
    const r = stored?.record;
    if (!r || r.holder === null) return;
    this.held.set(name, { holder: r.holder, term: r.term });
    if (this.held.size > Holdings.REMEMBERED) this.held.delete(this.held.keys().next().value as string);
  }

  /** Whether `name` was held at `term` (by anyone) when this instance last saw it. */
  holdsTerm(name: string, term: unknown): boolean {
    return this.held.get(name)?.term === term;
  }

  /** Whether `holder` held `name` (at `term`, when given) when this instance last saw it. */
  holds(name: string, holder: unknown, term?: unknown): boolean {
    const h = this.held.get(name);
    return h !== undefined && h.holder === holder && (term === undefined || h.term === term);
  }
}

const LEASE = "/v1/leases/([^/]+)";
const MEMBER = "/v1/groups/[^/]+/members/[^/]+";
const HOLDER_ROUTES = new RegExp(`^(${LEASE}/(renew|release)|${MEMBER}/(handoff|leave))$`);
const ACQUIRE = new RegExp(`^${LEASE}/acquire$`);
const RAW_WRITE = new RegExp(`^${LEASE}$`);
const HEARTBEAT = new RegExp(`^${MEMBER}/heartbeat$`);

export interface Request {
  method: string;
  /** The raw path: names stay URL-encoded, so a lease name cannot look like a route. */
  path: string;
  header(name: string): string | undefined;
  /** The parsed body (rejects when it is not JSON: the request is then `other`, and its route answers 400). */
  body(): Promise<unknown>;
}

/** The lane of a request (see the module comment). */
export async function laneOf(req: Request, holdings: Holdings): Promise<Lane> {
  const { method, path } = req;
  if (method === "POST" && HOLDER_ROUTES.test(path)) return "holder";
  const body = async () => (await req.body().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (method === "POST" && HEARTBEAT.test(path))
    return typeof (await body())?.session === "number" ? "holder" : "other";
  const acquire = method === "POST" ? ACQUIRE.exec(path) : null;
  if (acquire) return holdings.holds(nameOf(acquire[1]!), (await body())?.holder) ? "renewal" : "other";
  const write = method === "PUT" && req.header("if-match") ? RAW_WRITE.exec(path) : null;
  if (write) {
    const sent = await body();
    const name = nameOf(write[1]!);
    // Its own term renewed (same holder) or released (holder null) by the holder this instance saw.
    const renews =
      sent?.holder === null ? holdings.holdsTerm(name, sent.term) : holdings.holds(name, sent?.holder, sent?.term);
    return renews ? "renewal" : "other";
  }
  return "other";
}

function nameOf(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // not a name the route will accept either: it answers 400
  }
}
