/**
 * The HTTP API in the simulated world (scenario.ts with `api`): candidates reach the store only
 * through the API's Hono app (src/api), as `HttpStore`s whose `fetch` crosses the chaos network
 * (chaos-store.ts) and whose answers pass their process's gate (process.ts). The server runs on
 * a process of its own with its own skewed wall clock (never paused: its faults are the
 * network's), stamps `renewedAt` with it and applies its holding rules (docs/design.md §5) before
 * each write reaches the one real store.
 *
 * The network's faults per request, as ChaosStore draws them for a store call: latency each way
 * with a tail; for a write a lost request, a reset before the server saw it (ambiguous to the
 * client, as any failed fetch of a write is), a reordered write (held until another process's
 * write reaches the store), a reset after it applied, a lost answer; for a read a reset or a
 * hang. Push (watch) is not offered: followers poll the API.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createApp } from "../../src/api/app.js";
import type { ManualClock } from "../../src/clock.js";
import type { CallOptions, LeaseRecord, LeaseStore, Revision, Stored } from "../../src/lease.js";
import { StoreWrapper } from "../../src/testkit/store-wrapper.js";
import type { Network } from "./chaos-store.js";
import { SimProcess } from "./process.js";

const BASE_URL = "http://127.0.0.1:8787";
const never = <T>() => new Promise<T>(() => undefined);

/** An answer as it leaves the server: read in full, so nothing of it runs on after the request. */
interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/** The store behind the API: every applied write logged with the candidate whose request made it. */
class ServerStore extends StoreWrapper {
  constructor(
    inner: LeaseStore,
    private readonly network: Network,
    private readonly sender: () => string,
  ) {
    super(inner);
  }

  override put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    return this.network.arrive(this.sender(), () => this.inner.put(next, expected, options));
  }
}

export class SimServer {
  readonly process: SimProcess;
  /** Answers by status, e.g. how often the holding rules refused a write (409). */
  readonly answers = new Map<number, number>();
  private readonly app: ReturnType<typeof createApp>;
  private readonly requests = new AsyncLocalStorage<string>();
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    inner: LeaseStore,
    private readonly network: Network,
    clock: ManualClock,
    wallOffsetMs: number,
    settle: () => Promise<void>,
    maxSkewMs: number,
  ) {
    this.process = new SimProcess("api", clock, wallOffsetMs, settle);
    const store = new ServerStore(inner, network, () => this.requests.getStore() ?? "api");
    this.app = createApp({ store, auth: { insecureNoAuth: true }, clock: this.process.clock, maxSkewMs });
  }

  /** Whether a request is being served (the server's own async steps, e.g. digests, are not the clock's). */
  get busy(): boolean {
    return this.inflight.size > 0;
  }

  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** Serves one request that reached the server from `sender` (a candidate instance's label). */
  serve(sender: string, request: Request): Promise<Answer> {
    const served = this.requests.run(sender, async () => {
      const res = await this.app.fetch(request);
      const body = await res.text();
      this.answers.set(res.status, (this.answers.get(res.status) ?? 0) + 1);
      return { status: res.status, headers: res.headers, body };
    });
    this.inflight.add(served);
    const done = () => this.inflight.delete(served);
    served.then(done, done);
    return served;
  }

  /**
   * The `fetch` of one candidate process: the request crosses the network to the server, the
   * answer crosses back and reaches the candidate through its gate. An abort (the caller's
   * timeout) answers at once but does not recall a request already sent.
   */
  fetchFor(process: SimProcess): typeof fetch {
    return ((input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      const flow = this.flow(process.label, request);
      return new Promise<Response>((resolve, reject) => {
        let settled = false;
        const once = (settle: () => void) => () => {
          if (settled) return;
          settled = true;
          settle();
        };
        const signal = init?.signal ?? undefined;
        const aborted = () => process.deliver(once(() => reject(signal?.reason)));
        if (signal?.aborted) return aborted();
        signal?.addEventListener("abort", aborted, { once: true });
        flow.then(
          (answer) =>
            process.deliver(
              once(() => resolve(new Response(answer.body, { status: answer.status, headers: answer.headers }))),
            ),
          (error: unknown) => process.deliver(once(() => reject(error))),
        );
      });
    }) as typeof fetch;
  }

  private async flow(sender: string, request: Request): Promise<Answer> {
    const write = request.method !== "GET";
    const body = write ? await request.text() : undefined;
    // The copy the server gets carries no signal: a client's abort does not recall a sent request.
    const sent = new Request(request.url, {
      method: request.method,
      headers: request.headers,
      ...(body === undefined ? {} : { body }),
    });
    if (!write) {
      const fault = this.network.drawGetFault();
      await this.network.travel();
      if (fault === "get-hang") return never();
      if (fault === "get-fail") throw new TypeError("chaos: connection reset (read)");
      const answer = await this.serve(sender, sent);
      await this.network.travel();
      return answer;
    }
    const fault = this.network.drawPutFault();
    await this.network.travel();
    if (fault === "lost-request") return never();
    if (fault === "fail-before" || fault === "ambiguous-before") {
      throw new TypeError("chaos: connection reset before the server saw the request");
    }
    if (fault === "reorder") await this.network.hold(sender);
    const answer = await this.serve(sender, sent);
    if (fault === "lost-response") return never();
    await this.network.travel();
    if (fault === "fail-after") throw new TypeError("chaos: connection reset after the server answered");
    return answer;
  }
}

export { BASE_URL as SIM_API_URL };
