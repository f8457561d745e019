/** The few parts of autocannon 8 (which ships no types) that the benchmarks use. */
declare module "autocannon" {
  /** Per connection: what a request's hooks keep between requests (a lease name, its term). */
  type Context = Record<string, unknown>;
  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (request: Request, context: Context) => Request;
    onResponse?: (status: number, body: string, context: Context) => void;
  }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    pipelining?: number;
    requests?: Request[];
  }
  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
    total: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    "2xx": number;
    duration: number;
  }
  function autocannon(options: Options): Promise<Result>;
  namespace autocannon {
    export type { Context, Request };
  }
  export default autocannon;
}
