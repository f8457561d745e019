/**
 * Fencing an HTTP service (`leasehold/fencing/http`). A leader sends its term and its lease with
 * every write: the headers `Leasehold-Term: 7` and `Leasehold-Lease: reports/daily`
 * (`fenceHeaders`, or `fencedFetch`, which also turns a refusal into `StaleTermError`). The
 * service puts a middleware in front of its fenced routes (`honoFence` for Hono, `nodeFence` for
 * node:http and Express-style `(req, res, next)`), which keeps the highest term it has seen per
 * lease (`TermFence`) and answers `409 application/problem+json`
 * (`urn:leasehold:problem:stale-term`) to an older one, before the route runs.
 *
 * Admission is not enough on its own: a request of term 7 admitted just before term 8 arrived may
 * still be running when term 8's runs, and land after it. So a request runs only once every
 * request of a lower term admitted before it has finished (their responses closed): the effects
 * of one lease's requests happen in term order, and a new leader's first write always comes after
 * the last write the old leader got in. Requests of one term run concurrently, as before.
 *
 * Where the highest terms live (`TermStore`): in memory by default (`MemoryTermStore`), bounded
 * by `maxLeases` (10,000 lease names of at most 192 characters plus a number each, a few MB;
 * a request naming one more lease is answered 503, never by forgetting a term, which would
 * re-admit a deposed leader). A term kept in memory is per process and lost on restart: after a
 * restart, or behind several replicas, use a store all of them share (its `raise` must be atomic),
 * and read "What the term guarantees" in docs/fencing.md (a stale write that arrives first is
 * accepted). Ordering of running requests (above) is kept within one process.
 * Runtime-neutral.
 */
import type { MiddlewareHandler } from "hono";
import { z } from "zod";
import { LeaseholdError, LeaseValidationError, StaleTermError } from "../errors.js";
import { NAME_RULE, nameSchema, validate } from "../lease.js";
import { admits, termSchema } from "./fence.js";

export { StaleTermError } from "./fence.js";

/** The request header carrying the writer's term. */
export const TERM_HEADER = "Leasehold-Term";
/** The request header naming the lease the term belongs to. */
export const LEASE_HEADER = "Leasehold-Lease";
/** The problem type of a refusal (409). */
export const STALE_TERM_PROBLEM = "urn:leasehold:problem:stale-term";
const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Where a fence keeps the highest term seen per lease. */
export interface TermStore {
  /**
   * Atomically: if the lease's highest term is absent or <= `term`, make it `term`. Returns the
   * highest term after the call (`term` itself when admitted, a higher one when not). Throwing
   * refuses the request with 503.
   */
  raise(lease: string, term: number): number | Promise<number>;
}

export const DEFAULT_MAX_LEASES = 10_000;

/** The default `TermStore`: a map in this process, of at most `maxLeases` leases. */
export class MemoryTermStore implements TermStore {
  readonly maxLeases: number;
  private readonly highest = new Map<string, number>();

  constructor(options: { maxLeases?: number } = {}) {
    this.maxLeases = options.maxLeases ?? DEFAULT_MAX_LEASES;
    if (!Number.isSafeInteger(this.maxLeases) || this.maxLeases < 1) {
      throw new LeaseValidationError("MemoryTermStore options", [
        { path: "maxLeases", message: "expected a whole number >= 1" },
      ]);
    }
  }

  raise(lease: string, term: number): number {
    const seen = this.highest.get(lease);
    if (seen === undefined && this.highest.size >= this.maxLeases) {
      throw new LeaseholdError(
        `the fence keeps the terms of at most ${this.maxLeases} leases and is full: lease "${lease}" is refused (a term is never forgotten; raise maxLeases or use a TermStore of your own)`,
      );
    }
    if (!admits(seen, term)) return seen as number;
    this.highest.set(lease, term);
    return term;
  }

  /** The highest term seen for `lease`, if any. */
  get(lease: string): number | undefined {
    return this.highest.get(lease);
  }

  /** How many leases it keeps. */
  get size(): number {
    return this.highest.size;
  }
}

/** The outcome of `TermFence.admit`. */
export type Admission =
  | {
      admitted: true;
      highest: number /** Call once the request's effect is over (its response closed). */;
      done(): void;
    }
  | { admitted: false; highest: number };

/** Requests of one lease in this process: how many of each term are in flight, and who waits. */
interface LeaseRequests {
  inflight: Map<number, number>;
  waiters: Set<() => void>;
}

/**
 * The fence of one service: admits a request of `term` for `lease` when no higher term has been
 * seen, then holds it until every lower-term request admitted before it has finished.
 */
export class TermFence {
  readonly store: TermStore;
  /** How long an admitted request may wait for older ones to finish before it is answered 503. */
  readonly drainTimeoutMs: number;
  private readonly leases = new Map<string, LeaseRequests>();

  constructor(options: { store?: TermStore; drainTimeoutMs?: number } = {}) {
    this.store = options.store ?? new MemoryTermStore();
    this.drainTimeoutMs = options.drainTimeoutMs ?? 30_000;
  }

  async admit(lease: string, term: number): Promise<Admission> {
    // Counted before the store is asked, so a higher term admitted meanwhile waits for this one.
    const requests = this.enter(lease, term);
    let highest: number;
    try {
      highest = await this.store.raise(lease, term);
    } catch (error) {
      this.leave(lease, requests, term);
      throw error;
    }
    if (highest > term) {
      this.leave(lease, requests, term);
      return { admitted: false, highest };
    }
    try {
      await this.drained(lease, requests, term);
    } catch (error) {
      this.leave(lease, requests, term);
      throw error;
    }
    let left = false;
    return {
      admitted: true,
      highest,
      done: () => {
        if (left) return;
        left = true;
        this.leave(lease, requests, term);
      },
    };
  }

  /** Requests of `lease` in flight in this process (0 when none). */
  inFlight(lease: string): number {
    let n = 0;
    for (const count of this.leases.get(lease)?.inflight.values() ?? []) n += count;
    return n;
  }

  private enter(lease: string, term: number): LeaseRequests {
    let requests = this.leases.get(lease);
    if (requests === undefined) {
      requests = { inflight: new Map(), waiters: new Set() };
      this.leases.set(lease, requests);
    }
    requests.inflight.set(term, (requests.inflight.get(term) ?? 0) + 1);
    return requests;
  }

  private leave(lease: string, requests: LeaseRequests, term: number): void {
    const count = (requests.inflight.get(term) ?? 1) - 1;
    if (count > 0) requests.inflight.set(term, count);
    else requests.inflight.delete(term);
    if (requests.inflight.size === 0) this.leases.delete(lease);
    for (const wake of [...requests.waiters]) wake();
  }

  private drained(lease: string, requests: LeaseRequests, term: number): Promise<void> {
    const clear = () => [...requests.inflight.keys()].every((t) => t >= term);
    if (clear()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        requests.waiters.delete(wake);
        reject(
          new LeaseholdError(
            `lease "${lease}": requests of a term below ${term} were still running after ${this.drainTimeoutMs} ms`,
          ),
        );
      }, this.drainTimeoutMs);
      const wake = () => {
        if (!clear()) return;
        clearTimeout(timer);
        requests.waiters.delete(wake);
        resolve();
      };
      requests.waiters.add(wake);
    });
  }
}

export interface HttpFenceOptions {
  /** The fence (and so its `TermStore`) to use. Default: a new `TermFence` over a `MemoryTermStore`. */
  fence?: TermFence;
  /**
   * The lease every request through this middleware belongs to. Default: the `Leasehold-Lease`
   * header names it (required then); with a lease here, the header may be left out, and must
   * name this lease when sent.
   */
  lease?: string;
}

/** A problem+json answer (RFC 9457). */
interface Problem {
  status: number;
  body: Record<string, unknown>;
}

const problem = (status: number, kind: string, title: string, detail: string, extra: Record<string, unknown> = {}) => ({
  status,
  body: { type: `urn:leasehold:problem:${kind}`, title, status, detail, ...extra },
});

/** The lease and term a request carries, or the problem to answer. */
function readFenceHeaders(
  header: (name: string) => string | undefined,
  fixedLease: string | undefined,
): { lease: string; term: number } | Problem {
  const rawTerm = header(TERM_HEADER);
  const rawLease = header(LEASE_HEADER);
  if (rawTerm === undefined || (rawLease === undefined && fixedLease === undefined)) {
    return problem(
      428,
      "precondition-required",
      "Leasehold-Term and Leasehold-Lease required",
      `this resource is fenced: send the writer's term in ${TERM_HEADER} and its lease in ${LEASE_HEADER}`,
    );
  }
  const errors: Array<{ path: string; message: string }> = [];
  const term = /^[1-9][0-9]{0,15}$/.test(rawTerm) ? Number(rawTerm) : Number.NaN;
  if (!Number.isSafeInteger(term)) {
    errors.push({ path: TERM_HEADER, message: "expected the leader's term, a whole number >= 1" });
  }
  const lease = rawLease ?? fixedLease;
  if (!nameSchema.safeParse(lease).success) {
    errors.push({ path: LEASE_HEADER, message: NAME_RULE });
  } else if (fixedLease !== undefined && lease !== fixedLease) {
    errors.push({ path: LEASE_HEADER, message: `this resource is fenced by lease "${fixedLease}"` });
  }
  if (errors.length > 0) return problem(400, "validation", "Invalid request", "invalid fence headers", { errors });
  return { lease: lease as string, term };
}

/** The problem to answer, or the admission of a request let through (call `done` when it ends). */
async function gate(
  fence: TermFence,
  header: (name: string) => string | undefined,
  fixedLease: string | undefined,
): Promise<Problem | { done(): void }> {
  const checked = readFenceHeaders(header, fixedLease);
  if ("status" in checked) return checked;
  const { lease, term } = checked;
  let admission: Admission;
  try {
    admission = await fence.admit(lease, term);
  } catch (error) {
    return problem(503, "over-capacity", "Fence unavailable", (error as Error).message ?? String(error));
  }
  if (!admission.admitted) {
    return problem(
      409,
      "stale-term",
      "Stale term",
      `lease "${lease}" has written here with term ${admission.highest}, newer than this writer's term ${term}: a newer leader exists, so stop acting as leader`,
      { lease, term, seenTerm: admission.highest },
    );
  }
  return admission;
}

/** Hono middleware: fences the routes it is mounted on (`app.use("/reports/*", honoFence())`). */
export function honoFence(options: HttpFenceOptions = {}): MiddlewareHandler {
  const fixedLease = options.lease === undefined ? undefined : validateLease(options.lease);
  const fence = options.fence ?? new TermFence();
  return async (c, next) => {
    const outcome = await gate(fence, (name) => c.req.header(name), fixedLease);
    if ("status" in outcome) {
      return c.body(JSON.stringify(outcome.body), outcome.status as 400, { "content-type": PROBLEM_CONTENT_TYPE });
    }
    try {
      await next();
    } finally {
      outcome.done();
    }
  };
}

/** What `nodeFence` needs of a request: node:http's `IncomingMessage`, Express's `Request`. */
export interface FenceRequest {
  headers: Record<string, string | string[] | undefined>;
}

/** What `nodeFence` needs of a response: node:http's `ServerResponse`, Express's `Response`. */
export interface FenceResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body: string): unknown;
  once(event: "close", listener: () => void): unknown;
}

/**
 * node:http / Express middleware: `app.use("/reports", nodeFence())`, or in a plain node:http
 * handler `nodeFence()(req, res, () => handle(req, res))`. The request counts as running until
 * its response closes.
 */
export function nodeFence(
  options: HttpFenceOptions = {},
): (req: FenceRequest, res: FenceResponse, next: (error?: unknown) => void) => void {
  const fixedLease = options.lease === undefined ? undefined : validateLease(options.lease);
  const fence = options.fence ?? new TermFence();
  return (req, res, next) => {
    const header = (name: string) => {
      const value = req.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(", ") : value;
    };
    gate(fence, header, fixedLease).then(
      (outcome) => {
        if ("status" in outcome) {
          res.statusCode = outcome.status;
          res.setHeader("content-type", PROBLEM_CONTENT_TYPE);
          res.end(JSON.stringify(outcome.body));
          return;
        }
        res.once("close", () => outcome.done());
        next();
      },
      (error: unknown) => next(error),
    );
  };
}

/** The headers a leader sends with a fenced request. */
export function fenceHeaders(options: { lease: string; term: number }): Record<string, string> {
  const { lease, term } = validate("fence headers", fenceSchema, options);
  return { [TERM_HEADER]: String(term), [LEASE_HEADER]: lease };
}

/**
 * `fetch` with the fence headers added. A refusal by a fence (409 `stale-term`) throws
 * `StaleTermError` with the term the service holds; every other answer is returned as it is.
 */
export async function fencedFetch(
  input: string | URL,
  init: RequestInit | undefined,
  options: { lease: string; term: number; fetch?: typeof fetch },
): Promise<Response> {
  const headers = new Headers(init?.headers);
  for (const [name, value] of Object.entries(fenceHeaders(options))) headers.set(name, value);
  const response = await (options.fetch ?? fetch)(input, { ...init, headers });
  if (response.status !== 409 || !response.headers.get("content-type")?.startsWith(PROBLEM_CONTENT_TYPE)) {
    return response;
  }
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as { type?: unknown; seenTerm?: unknown } | undefined;
  if (body?.type !== STALE_TERM_PROBLEM) return response;
  const seen = typeof body.seenTerm === "number" ? body.seenTerm : undefined;
  throw new StaleTermError(`${init?.method ?? "GET"} ${String(input)} (lease "${options.lease}")`, options.term, seen);
}

const fenceSchema = z.strictObject({
  lease: nameSchema,
  term: termSchema,
  fetch: z.custom<typeof fetch>((f) => typeof f === "function", { error: "expected a fetch function" }).optional(),
});

function validateLease(lease: unknown): string {
  return validate("fence options", z.object({ lease: nameSchema }), { lease }).lease;
}
