/**
 * Lease holders renewing through the API's stateless routes, each renewal on a connection of its
 * own (what a shell script, a cron job or a function sends: no pooled connection to hide behind),
 * from a chosen local address. For the connection tests and the bench (issue #30, item 5): every
 * renewal's status and when it was sent and answered, as the holders themselves saw them.
 */
import { request } from "node:http";

export interface Renewal {
  lease: string;
  /** performance.now() when sent and when answered (or failed). */
  sentAt: number;
  doneAt: number;
  /** The HTTP status, or "error: <code>" when no answer came. */
  status: number | string;
}

const INSTANCE = "holder-instance-0123456789";

/** One JSON request on a fresh connection from `from`; resolves with the status (never rejects). */
export function call(
  url: string,
  path: string,
  body: unknown,
  options: { from?: string; token?: string; timeoutMs?: number } = {},
): Promise<{ status: number | string; body: unknown }> {
  const text = JSON.stringify(body);
  return new Promise((resolve) => {
    const req = request(
      `${url}${path}`,
      {
        method: "POST",
        agent: false,
        ...(options.from ? { localAddress: options.from } : {}),
        headers: {
          "Content-Type": "application/json",
          "Content-Length": Buffer.byteLength(text),
          Connection: "close",
          ...(options.token ? { Authorization: `Bearer ${options.token}` } : {}),
        },
        timeout: options.timeoutMs ?? 30_000,
      },
      (res) => {
        let answer = "";
        res.on("data", (d: Buffer) => {
          answer += d.toString();
        });
        res.on("end", () => {
          let parsed: unknown = answer;
          try {
            parsed = JSON.parse(answer);
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on("error", (e: NodeJS.ErrnoException) => resolve({ status: `error: ${e.code ?? e.message}`, body: null }));
      },
    );
    req.on("timeout", () => req.destroy(Object.assign(new Error("timeout"), { code: "TIMEOUT" })));
    req.on("error", (e: NodeJS.ErrnoException) => resolve({ status: `error: ${e.code ?? e.message}`, body: null }));
    req.end(text);
  });
}

export interface RenewOptions {
  everyMs: number;
  leaseMs: number;
  until: () => boolean;
  from?: string;
  token?: string;
}

const leasePath = (name: string, verb: string) => `/v1/leases/${encodeURIComponent(name)}/${verb}`;

/** Acquires `leases` as holder "h"; the term of each. */
export async function acquireAll(
  url: string,
  leases: string[],
  options: Omit<RenewOptions, "everyMs" | "until">,
): Promise<Map<string, number>> {
  const terms = new Map<string, number>();
  for (const lease of leases) {
    const body = { holder: "h", instance: INSTANCE, leaseMs: options.leaseMs };
    const acquired = await call(url, leasePath(lease, "acquire"), body, options);
    const term = (acquired.body as { lease?: { term?: number } } | null)?.lease?.term;
    if (acquired.status !== 200 || term === undefined) {
      throw new Error(`acquiring ${lease} answered ${acquired.status}: ${JSON.stringify(acquired.body)}`);
    }
    terms.set(lease, term);
  }
  return terms;
}

/**
 * Renews each lease of `terms` every `everyMs` until `until()` is true, each on its own schedule
 * (a renewal is sent at its time whether the last was answered or not, as a holder whose deadline
 * does not wait). Returns every renewal.
 */
export async function renewAll(url: string, terms: Map<string, number>, options: RenewOptions): Promise<Renewal[]> {
  const renewals: Renewal[] = [];
  const pending: Array<Promise<void>> = [];
  const loop = async (lease: string, offset: number) => {
    await new Promise((r) => setTimeout(r, offset));
    while (!options.until()) {
      const sentAt = performance.now();
      const body = { holder: "h", instance: INSTANCE, term: terms.get(lease) };
      pending.push(
        call(url, leasePath(lease, "renew"), body, options).then((answer) => {
          renewals.push({ lease, sentAt, doneAt: performance.now(), status: answer.status });
        }),
      );
      await new Promise((r) => setTimeout(r, Math.max(0, sentAt + options.everyMs - performance.now())));
    }
  };
  const leases = [...terms.keys()];
  await Promise.all(leases.map((lease, i) => loop(lease, (i * options.everyMs) / leases.length)));
  await Promise.all(pending);
  return renewals.sort((a, b) => a.sentAt - b.sentAt);
}

/** `acquireAll`, then `renewAll`. */
export async function holdAndRenew(url: string, leases: string[], options: RenewOptions): Promise<Renewal[]> {
  return renewAll(url, await acquireAll(url, leases, options), options);
}
