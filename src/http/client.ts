/**
 * Typed client of the leasehold HTTP API, runtime-neutral (fetch only). Responses are checked
 * against the wire contract (./schemas.ts), the same schemas the server validates with.
 *
 * Retries only where they are safe: reads, and acquire / renew / release, which the server makes
 * idempotent for the same holder (a repeated acquire by the holder renews, a repeated release of
 * the same term is a no-op), and a sharded member's heartbeat and leave (the server recognises the
 * member's `instance`). The raw compare-and-swap `put` is never retried: a retry of a write that
 * applied would come back as a conflict and hide the success; nor is a hand-off confirmation, whose
 * retry after it applied would answer 409 `bucket-not-held`.
 */
import type { z } from "zod";
import { systemClock } from "../clock.js";
import { describeIssues } from "../errors.js";
import { LeaseholdApiError } from "./api-error.js";
import type {
  HandoffConfirmation,
  HandoffResultView,
  HeartbeatRequest,
  HeartbeatView,
  LeaseListView,
  LeaseResultView,
  LeaseView,
  LeaveRequest,
  MemberLeftView,
  ProblemView,
  RecordWrite,
  WatchEventView,
} from "./schemas.js";
import {
  HandoffResult,
  Heartbeat,
  INSTANCE_HEADER,
  INSTANCE_PATTERN,
  Lease,
  LeaseList,
  LeaseResult,
  MAX_TIMEOUT_HEADER_MS,
  MemberLeft,
  Problem,
  TIMEOUT_HEADER,
} from "./schemas.js";
import { readSse } from "./sse.js";

export interface ClientOptions {
  /** e.g. http://127.0.0.1:8787 */
  baseUrl: string;
  /** Bearer token; omit for a server started with insecure no-auth. */
  token?: string;
  fetch?: typeof fetch;
  /** Per-request timeout, sent as Leasehold-Timeout-Ms: the server never acts on a request after it. Default 10000 ms. */
  timeoutMs?: number;
  /**
   * A watch stream that delivers nothing for this long (the server sends a keep-alive comment
   * every LEASEHOLD_HEARTBEAT_MS, 15 s by default) is taken for a dead link and reconnected; the
   * same bounds the wait for a watch's first answer. Default 45000 ms: three keep-alives.
   */
  watchIdleMs?: number;
  /** Retries of safe requests on network errors and 503. Default 2. */
  retries?: number;
  /**
   * This process's instance: a random id picked once (a UUID, 16-64 characters of A-Z a-z 0-9 . _ : -),
   * sent with acquire, renew, release and the raw PUT. The server keeps only its digest and
   * renews, releases or re-acquires a lease only for the instance that took it. Default: a random
   * UUID per client, so use one client per process (or pass the same instance to each).
   */
  instance?: string;
}

/** Who renews or releases a term: its holder, at that term, as this client's instance unless named. */
type HeldTerm = { holder: string; term: number; instance?: string };

/** A watch that lost its connection reconnects this many times in a row before it gives up. */
const WATCH_RECONNECTS = 3;

interface Call {
  method: "GET" | "POST" | "PUT";
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  retry: boolean;
  signal?: AbortSignal | undefined;
}

export class LeaseholdClient {
  private readonly base: string;
  private readonly fetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly watchIdleMs: number;
  /** This client's instance (ClientOptions.instance): sent with every lease write. */
  readonly instance: string;

  constructor(private readonly options: ClientOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new LeaseholdApiError(
        0,
        undefined,
        `invalid baseUrl ${JSON.stringify(options.baseUrl)}: expected http(s)://host[:port]/`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new LeaseholdApiError(
        0,
        undefined,
        `invalid baseUrl ${JSON.stringify(options.baseUrl)}: expected http or https`,
      );
    }
    this.base = url.href.replace(/\/+$/, "");
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retries ?? 2;
    this.watchIdleMs = options.watchIdleMs ?? 45_000;
    this.instance = options.instance ?? crypto.randomUUID();
    if (!INSTANCE_PATTERN.test(this.instance)) {
      throw new LeaseholdApiError(
        0,
        undefined,
        "invalid instance: expected 16-64 characters of A-Z a-z 0-9 . _ : - (a random id, e.g. a UUID)",
      );
    }
  }

  static leasePath(name: string): string {
    return `/v1/leases/${encodeURIComponent(name)}`;
  }

  /** Acquire (or, from this instance, renew): `body.instance` defaults to this client's. */
  async acquire(
    name: string,
    body: { holder: string; leaseMs: number; metadata?: Record<string, string>; instance?: string },
    signal?: AbortSignal,
  ): Promise<LeaseResultView> {
    return this.leaseVerb(name, "acquire", body, signal);
  }

  async renew(name: string, body: HeldTerm, signal?: AbortSignal): Promise<LeaseResultView> {
    return this.leaseVerb(name, "renew", body, signal);
  }

  async release(name: string, body: HeldTerm, signal?: AbortSignal): Promise<LeaseResultView> {
    return this.leaseVerb(name, "release", body, signal);
  }

  /**
   * Clears a record the server cannot read or judge (the token needs the verb `force`): it becomes
   * released. `term`: for a record the store cannot read, the term the released record carries.
   * Never retried: the server answers 412 if the record changed meanwhile.
   */
  async forceRelease(name: string, body: { term?: number } = {}, signal?: AbortSignal): Promise<LeaseResultView> {
    const res = await this.send({
      method: "POST",
      path: `${LeaseholdClient.leasePath(name)}/force-release`,
      body,
      retry: false,
      signal,
    });
    return this.parse(res, LeaseResult);
  }

  /** `null` when the lease never existed. */
  async get(name: string, signal?: AbortSignal): Promise<LeaseView | null> {
    const res = await this.send({ method: "GET", path: LeaseholdClient.leasePath(name), retry: true, signal });
    if (res.status === 404) return null;
    return this.parse(res, Lease);
  }

  async list(
    query: { prefix?: string; limit?: number; cursor?: string } = {},
    signal?: AbortSignal,
  ): Promise<LeaseListView> {
    const params = new URLSearchParams();
    if (query.prefix !== undefined) params.set("prefix", query.prefix);
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    if (query.cursor !== undefined) params.set("cursor", query.cursor);
    const res = await this.send({ method: "GET", path: `/v1/leases?${params}`, retry: true, signal });
    return this.parse(res, LeaseList);
  }

  /** Raw compare-and-swap (the token needs the verb cas); `expected` null = create. Never retried. */
  async put(name: string, body: RecordWrite, expected: string | null, signal?: AbortSignal): Promise<LeaseView> {
    const headers: Record<string, string> = {
      ...(expected === null ? { "If-None-Match": "*" } : { "If-Match": `"${expected}"` }),
      [INSTANCE_HEADER]: this.instance,
    };
    const res = await this.send({
      method: "PUT",
      path: LeaseholdClient.leasePath(name),
      body,
      headers,
      retry: false,
      signal,
    });
    return this.parse(res, Lease);
  }

  static memberPath(group: string, member: string): string {
    return `/v1/groups/${encodeURIComponent(group)}/members/${encodeURIComponent(member)}`;
  }

  /**
   * A sharded member's heartbeat (docs/sharding.md, "Over HTTP"): renews (or, without `session`,
   * starts) its session and answers the buckets it may work on and the hand-offs asked of it.
   * Note your monotonic clock before calling: the answer is good until that instant + leaseMs -
   * your safety margin, however late it arrives. A 409 (`LeaseholdApiError`, `problem.type` ending
   * `session-ended` or `member-in-use`) means: stop all work.
   */
  async heartbeat(group: string, member: string, body: HeartbeatRequest, signal?: AbortSignal): Promise<HeartbeatView> {
    return this.memberVerb(group, member, "heartbeat", body, Heartbeat, true, signal);
  }

  /** The work on a bucket listed in `handoffs` has stopped: the server moves the bucket on. */
  async confirmHandoff(
    group: string,
    member: string,
    body: HandoffConfirmation,
    signal?: AbortSignal,
  ): Promise<HandoffResultView> {
    return this.memberVerb(group, member, "handoff", body, HandoffResult, false, signal);
  }

  /** Graceful leave, once all the member's work has stopped: its buckets are free at once. */
  async leave(group: string, member: string, body: LeaveRequest, signal?: AbortSignal): Promise<MemberLeftView> {
    return this.memberVerb(group, member, "leave", body, MemberLeft, true, signal);
  }

  /**
   * Server-Sent Events of one lease: the current state first, then each change. A dropped
   * connection is resumed with `Last-Event-ID` (the revision last seen), so the server sends only
   * what changed since; after a few failed reconnects in a row the iteration throws. A stream the
   * server ends on purpose (an "end" event: a Lambda invocation's deadline) is resumed at once and
   * never counts as a failure. An HTTP error answer (401, 403, 404, 501, ...) throws at once.
   */
  async *watch(name: string, signal: AbortSignal): AsyncIterable<WatchEventView> {
    let lastEventId: string | undefined;
    for (let failures = 0; ; ) {
      let res: Response;
      // A dead link may accept the connection and never answer: the answer's headers within
      // watchIdleMs (only them: the stream itself is bounded by readSse's idle limit).
      const unanswered = new AbortController();
      const timer = setTimeout(() => unanswered.abort(), this.watchIdleMs);
      try {
        res = await this.fetch(`${this.base}${LeaseholdClient.leasePath(name)}/watch`, {
          headers: {
            ...this.authHeader(),
            Accept: "text/event-stream",
            ...(lastEventId === undefined ? {} : { "Last-Event-ID": lastEventId }),
          },
          signal: AbortSignal.any([signal, unanswered.signal]),
        });
      } catch (cause) {
        if (signal.aborted || ++failures > WATCH_RECONNECTS) throw cause;
        await backoff(failures - 1, null, signal);
        continue;
      } finally {
        clearTimeout(timer);
      }
      if (!res.ok || !res.body) throw await this.failure(res);
      let received = false;
      let ended = false;
      let error: unknown;
      try {
        for await (const message of readSse(res.body, this.watchIdleMs)) {
          // The server ends the stream on purpose (a Lambda invocation's deadline): resume at once.
          if (message.event === "end") ended = true;
          if (message.event !== "lease") continue;
          const event = JSON.parse(message.data) as { lease: unknown; free: boolean };
          if (message.id !== undefined) lastEventId = message.id;
          received = true;
          failures = 0;
          yield { lease: event.lease === null ? null : Lease.parse(event.lease), free: event.free === true };
        }
      } catch (cause) {
        error = cause;
      }
      if (signal.aborted) return;
      if (ended && error === undefined) {
        failures = 0;
        continue;
      }
      // A stream that ends or breaks after delivering is resumed; one that never delivers counts.
      if (!received && ++failures > WATCH_RECONNECTS) {
        throw (
          error ?? new LeaseholdApiError(0, undefined, `watch of "${name}" closed ${failures} times before any event`)
        );
      }
      await backoff(failures, null, signal);
    }
  }

  /** A write verb on one lease, as this client's instance unless the body names one; safe to retry. */
  private async leaseVerb(
    name: string,
    verb: "acquire" | "renew" | "release",
    body: object,
    signal: AbortSignal | undefined,
  ): Promise<LeaseResultView> {
    const res = await this.send({
      method: "POST",
      path: `${LeaseholdClient.leasePath(name)}/${verb}`,
      body: { instance: this.instance, ...body },
      retry: true,
      signal,
    });
    if (res.status === 409) {
      const problem = Problem.parse(await res.json());
      if (problem.lease) return { leader: false, lease: problem.lease };
      throw new LeaseholdApiError(409, problem, problem.detail);
    }
    return this.parse(res, LeaseResult);
  }

  /** A sharded member's call: `retry` only where sending it twice is harmless. */
  private async memberVerb<T extends z.ZodType>(
    group: string,
    member: string,
    verb: "heartbeat" | "handoff" | "leave",
    body: unknown,
    schema: T,
    retry: boolean,
    signal: AbortSignal | undefined,
  ): Promise<z.output<T>> {
    const path = `${LeaseholdClient.memberPath(group, member)}/${verb}`;
    return this.parse(await this.send({ method: "POST", path, body, retry, signal }), schema);
  }

  private async parse<T extends z.ZodType>(res: Response, schema: T): Promise<z.output<T>> {
    if (!res.ok) throw await this.failure(res);
    return schema.parse(await res.json());
  }

  private async failure(res: Response): Promise<LeaseholdApiError> {
    let problem: ProblemView | undefined;
    try {
      problem = Problem.parse(await res.json());
    } catch {
      problem = undefined;
    }
    const fields = problem?.errors === undefined ? undefined : describeIssues(problem.errors);
    const retryAfter = /^\d{1,9}$/.test(res.headers.get("retry-after") ?? "")
      ? Number(res.headers.get("retry-after"))
      : undefined;
    return new LeaseholdApiError(
      res.status,
      problem,
      `leasehold API ${res.status}: ${problem?.detail ?? res.statusText}${fields ? ` (${fields})` : ""}`,
      retryAfter === undefined ? undefined : { retryAfter },
    );
  }

  private authHeader(): Record<string, string> {
    return this.options.token ? { Authorization: `Bearer ${this.options.token}` } : {};
  }

  private async send(call: Call): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const timeout = AbortSignal.timeout(Math.ceil(this.timeoutMs));
      const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
      try {
        const res = await this.fetch(`${this.base}${call.path}`, {
          method: call.method,
          headers: {
            ...this.authHeader(),
            ...(call.body === undefined ? {} : { "Content-Type": "application/json" }),
            // The server gives up on the request when this client does, and never acts on it later.
            [TIMEOUT_HEADER]: String(Math.min(MAX_TIMEOUT_HEADER_MS, Math.max(1, Math.ceil(this.timeoutMs)))),
            ...call.headers,
          },
          ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
          signal,
        });
        if (res.status === 503 && call.retry && attempt < this.retries) {
          await res.body?.cancel();
          await backoff(attempt, res.headers.get("retry-after"), call.signal);
          continue;
        }
        return res;
      } catch (cause) {
        if (call.signal?.aborted) throw cause;
        if (call.retry && attempt < this.retries) {
          await backoff(attempt, null, call.signal);
          continue;
        }
        throw new LeaseholdApiError(0, undefined, `leasehold API unreachable: ${(cause as Error).message}`, { cause });
      }
    }
  }
}

function backoff(attempt: number, retryAfter: string | null, signal?: AbortSignal): Promise<void> {
  const hinted = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : 0;
  const ms = Math.min(Math.max(hinted, 100 * 2 ** attempt * (1 + Math.random() * 0.2)), 5000);
  // systemClock's sleep removes its abort listener when the wait ends either way: a long-lived
  // signal (an elector's) would otherwise gather one listener per back-off.
  return systemClock.sleep(ms, signal);
}
