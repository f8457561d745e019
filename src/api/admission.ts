/**
 * Renewals first (docs/design.md §5, "Admission"): a server under more load than it can serve
 * keeps serving the requests that keep leases alive, and refuses the rest before they cost
 * anything. A lease that is lost because its renewal waited behind other work becomes an
 * acquisition, which adds work: refusing acquisitions first breaks that loop.
 *
 * Every /v1 request is in one of three lanes, known from its route (and, for a heartbeat, from
 * its body) before anything is read from the store:
 * - `holder`: what only a current holder sends: renew, release, a member heartbeat that names its
 *   session, a hand-off confirmation, a leave.
 * - `maybe-holder`: acquire and the raw PUT with If-Match, which are a renewal when the current
 *   holder's own process sends them (acquire by the holder renews; the HTTP store renews by PUT)
 *   and an acquisition otherwise. Only the record tells, so the lease service decides after its
 *   read: admitted on the reserved share, such a request that is not a renewal is refused there,
 *   before anything is written (`Caller.renewalsOnly`).
 * - `other`: acquisitions (a heartbeat without a session, a create), reads, lists, watches and
 *   the console's routes.
 *
 * Bounds: at most `inFlight` requests at once, of which `reservedInFlight` only for the first two
 * lanes. An `other` request is refused 503 `over-capacity` with Retry-After when the server is
 * late (its event loop more than `lateMs` behind: bound `lateMs`), then when the unreserved share
 * is in use (bound `inFlight`); a holder's request only when all of `inFlight` is. A watch stream
 * counts while its request is answered, not while it streams (streams have their own bounds,
 * src/api/limits.ts). Counters live in this instance's memory.
 *
 * Per instance: the Node entries turn it on (src/runtime/node.ts); a Lambda instance serves one
 * request at a time and a Worker's isolates come and go with load, so there these bounds would
 * mean nothing and their variables are refused (src/runtime/config.ts). Runtime-neutral.
 */
import { ProblemError } from "./problems.js";

export type Lane = "holder" | "maybe-holder" | "other";

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

  constructor(
    readonly bounds: AdmissionBounds,
    /** How late the event loop is now, in ms (src/api/lateness.ts). */
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
      return this.ticket(undefined);
    }
    if (this.open >= this.bounds.inFlight) {
      this.refused("inFlight", lane);
      throw overCapacity(
        "inFlight",
        `this server has ${this.open} requests in flight, the most it serves (inFlight ${this.bounds.inFlight}); retry later`,
      );
    }
    return this.ticket(lane === "maybe-holder" ? refusal : undefined);
  }

  /** Why a request that is not a current holder's would be refused now, if it would. */
  private refusalOfOther(): ProblemError | undefined {
    const late = this.lateness();
    if (late > this.bounds.lateMs) {
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

  private ticket(renewalsOnly: ProblemError | undefined): Ticket {
    this.open++;
    let open = true;
    return {
      renewalsOnly,
      done: () => {
        if (!open) return;
        open = false;
        this.open--;
      },
    };
  }
}

function overCapacity(bound: "inFlight" | "lateMs", detail: string): ProblemError {
  return new ProblemError("over-capacity", detail, { bound, retryAfter: 1 });
}

const LEASE = "/v1/leases/[^/]+";
const MEMBER = "/v1/groups/[^/]+/members/[^/]+";
const HOLDER_ROUTES = new RegExp(`^(${LEASE}/(renew|release)|${MEMBER}/(handoff|leave))$`);
const ACQUIRE = new RegExp(`^${LEASE}/acquire$`);
const RAW_WRITE = new RegExp(`^${LEASE}$`);
const HEARTBEAT = new RegExp(`^${MEMBER}/heartbeat$`);

/**
 * The lane of a request, from its method, its raw path (names stay URL-encoded, so a lease name
 * cannot look like a route) and, for a heartbeat, whether its body names a session (`body` reads
 * it; an unreadable body is `other`, and the route then answers 400).
 */
export async function laneOf(
  method: string,
  path: string,
  header: (name: string) => string | undefined,
  body: () => Promise<unknown>,
): Promise<Lane> {
  if (method === "POST" && HOLDER_ROUTES.test(path)) return "holder";
  if (method === "POST" && ACQUIRE.test(path)) return "maybe-holder";
  if (method === "PUT" && RAW_WRITE.test(path)) return header("if-match") ? "maybe-holder" : "other";
  if (method === "POST" && HEARTBEAT.test(path)) {
    const sent = await body().catch(() => undefined);
    const session = (sent as { session?: unknown } | undefined)?.session;
    return typeof session === "number" ? "holder" : "other";
  }
  return "other";
}
