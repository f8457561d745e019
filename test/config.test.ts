/**
 * The server configuration (src/api/config/policy.ts) as every entry reads it: each variable on each
 * entry, read or refused with its reason; bad values named with the value and what was expected;
 * the contradictions; serve's flags over the environment; the start-up line's auth mode; and
 * createApp's own option checks (src/api/options.ts). The entries' own tests (node-entry,
 * cli-commands, lambda, workers/, infra-aws) check that each entry uses what is read here.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../src/api/app.js";
import { describeAuth } from "../src/api/config/auth-mode.js";
import { type Entry, NOT_READ_BY, readServerConfig } from "../src/api/config/policy.js";
import { startupLine } from "../src/api/config/startup-line.js";
import { SERVER_VARIABLES, type ServerVariable } from "../src/api/config/variables.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { LeaseValidationError } from "../src/errors.js";
import { BACKENDS } from "../src/open-store.js";
import { WORKER_STORES } from "../src/runtime/worker-stores.js";

const TOKEN = "config-test-token-0123456789";
const TOKENS = JSON.stringify([{ name: "ci", token: TOKEN, prefixes: ["jobs/", ""], verbs: ["read", "write"] }]);
const ENTRIES: Entry[] = ["node", "serve", "lambda", "worker"];

/** The least each entry needs to start, so one variable at a time can be added. */
const BASE: Record<Entry, Record<string, string>> = {
  node: {},
  serve: {},
  lambda: { LEASEHOLD_STORE: "dynamodb://leases", AWS_REGION: "eu-west-1", LEASEHOLD_TOKENS: TOKENS },
  worker: { LEASEHOLD_TOKENS: TOKENS },
};

function refusal(env: Record<string, unknown>, entry: Entry, flags = {}): string {
  try {
    readServerConfig(env, entry, flags);
  } catch (error) {
    expect(error).toBeInstanceOf(LeaseValidationError);
    return (error as Error).message;
  }
  throw new Error("expected the configuration to be refused");
}

/** A valid value of each variable and what it must change in the configuration. */
const READS: Record<ServerVariable, { value: string; check: (c: ReturnType<typeof readServerConfig>) => void }> = {
  PORT: { value: "9001", check: (c) => expect(c.listen?.port).toBe(9001) },
  HOST: { value: "localhost", check: (c) => expect(c.listen?.host).toBe("localhost") },
  LEASEHOLD_STORE: {
    value: "dynamodb://other-table?region=us-east-1",
    check: (c) => expect(c.store).toMatchObject({ spec: { kind: "dynamodb", table: "other-table" } }),
  },
  LEASEHOLD_DB: {
    value: "/var/lib/leasehold/leases.db",
    check: (c) => expect(c.store).toMatchObject({ url: "sqlite:/var/lib/leasehold/leases.db", from: "LEASEHOLD_DB" }),
  },
  LEASEHOLD_TOKENS: {
    value: TOKENS,
    check: (c) => expect(c.auth).toMatchObject({ mode: "tokens", tokens: [{ name: "ci", token: TOKEN }] }),
  },
  LEASEHOLD_INSECURE_NO_AUTH: {
    value: "1",
    check: (c) =>
      expect(c.auth).toEqual({ mode: "none", because: "insecure-flag", flag: "LEASEHOLD_INSECURE_NO_AUTH=1" }),
  },
  LEASEHOLD_MAX_SKEW_MS: { value: "2500", check: (c) => expect(c.app.maxSkewMs).toBe(2500) },
  LEASEHOLD_WATCH_POLL_MS: { value: "250", check: (c) => expect(c.app.watchPollMs).toBe(250) },
  LEASEHOLD_HEARTBEAT_MS: { value: "5000", check: (c) => expect(c.app.heartbeatMs).toBe(5000) },
  LEASEHOLD_STORE_TIMEOUT_MS: { value: "750", check: (c) => expect(c.app.storeTimeoutMs).toBe(750) },
  LEASEHOLD_BODY_BYTES: { value: "8192", check: (c) => expect(c.app.limits.bodyBytes).toBe(8192) },
  LEASEHOLD_LIST_LIMIT: { value: "50", check: (c) => expect(c.app.limits.listLimit).toBe(50) },
  LEASEHOLD_WATCH_STREAMS: { value: "20", check: (c) => expect(c.app.limits.watchStreams).toBe(20) },
  LEASEHOLD_WATCH_STREAMS_PER_TOKEN: {
    value: "3",
    check: (c) => expect(c.app.limits.watchStreamsPerToken).toBe(3),
  },
  LEASEHOLD_RECORDS_PER_PREFIX: { value: "500", check: (c) => expect(c.app.limits.recordsPerPrefix).toBe(500) },
  LEASEHOLD_CREATES_PER_MINUTE: { value: "30", check: (c) => expect(c.app.limits.createsPerMinute).toBe(30) },
  LEASEHOLD_BUCKET_WRITES_PER_HEARTBEAT: {
    value: "16",
    check: (c) => expect(c.app.limits.bucketWritesPerHeartbeat).toBe(16),
  },
  LEASEHOLD_HEADERS_TIMEOUT_MS: { value: "2000", check: (c) => expect(c.listener?.headersTimeoutMs).toBe(2000) },
  LEASEHOLD_REQUEST_TIMEOUT_MS: { value: "3000", check: (c) => expect(c.listener?.requestTimeoutMs).toBe(3000) },
  LEASEHOLD_KEEP_ALIVE_TIMEOUT_MS: {
    value: "4000",
    check: (c) => expect(c.listener?.keepAliveTimeoutMs).toBe(4000),
  },
  LEASEHOLD_MAX_CONNECTIONS: { value: "64", check: (c) => expect(c.listener?.maxConnections).toBe(64) },
  LEASEHOLD_MAX_CONNECTIONS_PER_ADDRESS: {
    value: "16",
    check: (c) => expect(c.listener?.maxConnectionsPerAddress).toBe(16),
  },
  // LEASEHOLD_IN_FLIGHT alone: the reserved share follows it (a quarter).
  LEASEHOLD_IN_FLIGHT: {
    value: "40",
    check: (c) => expect(c.admission).toEqual({ inFlight: 40, reservedInFlight: 10, lateMs: 1000 }),
  },
  LEASEHOLD_RESERVED_IN_FLIGHT: { value: "200", check: (c) => expect(c.admission?.reservedInFlight).toBe(200) },
  LEASEHOLD_LATE_MS: { value: "100", check: (c) => expect(c.admission?.lateMs).toBe(100) },
  LEASEHOLD_CONSOLE: { value: "0", check: (c) => expect(c.console.ui).toBe(false) },
  LEASEHOLD_HISTORY_TERMS: { value: "7", check: (c) => expect(c.console.historyTerms).toBe(7) },
  LEASEHOLD_HISTORY_LEASES: { value: "300", check: (c) => expect(c.console.historyLeases).toBe(300) },
  LEASEHOLD_TOKEN: { value: "client-token", check: (c) => expect(c.storeEnv.LEASEHOLD_TOKEN).toBe("client-token") },
  AWS_REGION: { value: "ap-south-1", check: (c) => expect(c.storeEnv.AWS_REGION).toBe("ap-south-1") },
  AWS_DEFAULT_REGION: {
    value: "ap-south-2",
    check: (c) => expect(c.storeEnv.AWS_DEFAULT_REGION).toBe("ap-south-2"),
  },
  GOOGLE_CLOUD_PROJECT: { value: "proj-1", check: (c) => expect(c.storeEnv.GOOGLE_CLOUD_PROJECT).toBe("proj-1") },
  AZURE_STORAGE_CONNECTION_STRING: {
    value: "DefaultEndpointsProtocol=http;AccountName=a",
    check: (c) =>
      expect(c.storeEnv.AZURE_STORAGE_CONNECTION_STRING).toBe("DefaultEndpointsProtocol=http;AccountName=a"),
  },
  LEASEHOLD_LOG: { value: "json", check: (c) => expect(c.logFormat).toBe("json") },
  AZURE_STORAGE_KEY: { value: "a2V5", check: (c) => expect(c.storeEnv.AZURE_STORAGE_KEY).toBe("a2V5") },
  AZURE_STORAGE_SAS_TOKEN: { value: "sv=1", check: (c) => expect(c.storeEnv.AZURE_STORAGE_SAS_TOKEN).toBe("sv=1") },
  PGPASSWORD: { value: "s3cret", check: (c) => expect(c.storeEnv.PGPASSWORD).toBe("s3cret") },
  // The DynamoDB store's keys (a Worker's secrets; elsewhere what the AWS SDK would read first too).
  AWS_ACCESS_KEY_ID: { value: "AKIATEST", check: (c) => expect(c.storeEnv.AWS_ACCESS_KEY_ID).toBe("AKIATEST") },
  AWS_SECRET_ACCESS_KEY: { value: "secret", check: (c) => expect(c.storeEnv.AWS_SECRET_ACCESS_KEY).toBe("secret") },
  AWS_SESSION_TOKEN: { value: "session", check: (c) => expect(c.storeEnv.AWS_SESSION_TOKEN).toBe("session") },
};

/** What each entry needs alongside a variable for it to be read (the store it belongs to, ...). */
function companions(name: ServerVariable, entry: Entry): Record<string, string> {
  if (name === "LEASEHOLD_STORE" && entry === "worker") {
    return { AWS_ACCESS_KEY_ID: "AKIATEST", AWS_SECRET_ACCESS_KEY: "secret" };
  }
  if (name === "LEASEHOLD_INSECURE_NO_AUTH") return { LEASEHOLD_TOKENS: "" };
  return {};
}

describe("each variable on each entry: read, or refused with the reason", () => {
  for (const name of SERVER_VARIABLES) {
    for (const entry of ENTRIES) {
      const why = NOT_READ_BY[name]?.[entry];
      const reads = READS[name];
      if (reads === undefined) {
        it(`${name} has a case here`, () => expect.fail(`add ${name} to READS`));
        continue;
      }
      const { value, check } = reads;
      if (why === undefined) {
        it(`${name} is read by ${entry}`, () => {
          check(readServerConfig({ ...BASE[entry], ...companions(name, entry), [name]: value }, entry));
        });
      } else {
        it(`${name} is refused by ${entry}, saying why`, () => {
          const message = refusal({ ...BASE[entry], [name]: value }, entry);
          expect(message).toContain(`${name}: not read by `);
          expect(message).toContain(why);
        });
      }
    }
  }

  it("the Worker hands its AWS secrets to the DynamoDB store, and needs both keys", () => {
    const env = { ...BASE.worker, LEASEHOLD_STORE: "dynamodb://leases?region=eu-west-1" };
    const config = readServerConfig(
      { ...env, AWS_ACCESS_KEY_ID: "AKIATEST", AWS_SECRET_ACCESS_KEY: "s3cret", AWS_SESSION_TOKEN: "sess" },
      "worker",
    );
    expect(config.storeEnv).toMatchObject({
      AWS_ACCESS_KEY_ID: "AKIATEST",
      AWS_SECRET_ACCESS_KEY: "s3cret",
      AWS_SESSION_TOKEN: "sess",
    });
    expect(refusal({ ...env, AWS_ACCESS_KEY_ID: "AKIATEST" }, "worker")).toMatch(
      /AWS_SECRET_ACCESS_KEY: dynamodb:\/\/ on a Worker needs the secrets/,
    );
  });

  it("unset and empty are the same, and the defaults are documented ones", () => {
    const empty = Object.fromEntries(SERVER_VARIABLES.map((n) => [n, ""]));
    const config = readServerConfig(empty, "node");
    expect(config).toMatchObject({
      listen: { host: "127.0.0.1", port: 8787 },
      store: { url: "sqlite:./data/leasehold.db", from: "default" },
      auth: { mode: "none", because: "loopback", host: "127.0.0.1" },
      app: { maxSkewMs: 1000, watchPollMs: 1000, heartbeatMs: 15000, limits: {} },
      listener: {
        headersTimeoutMs: 5000,
        requestTimeoutMs: 10_000,
        keepAliveTimeoutMs: 5000,
        maxConnections: 1024,
        maxConnectionsPerAddress: 256,
      },
      warnings: [],
    });
    expect(readServerConfig(BASE.lambda, "lambda").app).toEqual({
      maxSkewMs: 1000,
      watchPollMs: 1000,
      heartbeatMs: 15_000,
      storeTimeoutMs: 2000,
      limits: {},
    });
    expect(readServerConfig(BASE.worker, "worker").store).toEqual({
      url: "durable-object:LEASES",
      spec: { kind: "durable-object", binding: "LEASES" },
      from: "default",
    });
  });
});

describe("bad values: the variable, the value and what was expected", () => {
  it.each([
    ["LEASEHOLD_MAX_SKEW_MS", "1s", 'LEASEHOLD_MAX_SKEW_MS: expected a whole number of milliseconds 0-60000, got "1s"'],
    ["LEASEHOLD_MAX_SKEW_MS", "abc", 'expected a whole number of milliseconds 0-60000, got "abc"'],
    ["LEASEHOLD_MAX_SKEW_MS", "-1", 'got "-1"'],
    ["LEASEHOLD_MAX_SKEW_MS", "60001", 'got "60001"'],
    ["LEASEHOLD_MAX_SKEW_MS", "NaN", 'got "NaN"'],
    ["LEASEHOLD_MAX_SKEW_MS", "1.5", 'got "1.5"'],
    [
      "LEASEHOLD_WATCH_POLL_MS",
      "0",
      'LEASEHOLD_WATCH_POLL_MS: expected a whole number of milliseconds 10-3600000, got "0"',
    ],
    [
      "LEASEHOLD_HEARTBEAT_MS",
      "1e3",
      'LEASEHOLD_HEARTBEAT_MS: expected a whole number of milliseconds 10-3600000, got "1e3"',
    ],
    ["PORT", "http", 'PORT: expected a port number 0-65535, got "http"'],
    ["PORT", "65536", 'got "65536"'],
    ["HOST", "[::1]", 'HOST: expected a host name or IP address to bind, such as 127.0.0.1 or 0.0.0.0, got "[::1]"'],
    [
      "LEASEHOLD_INSECURE_NO_AUTH",
      "true",
      'LEASEHOLD_INSECURE_NO_AUTH: expected "1" or "0" (1 turns auth off), got "true"',
    ],
    [
      "LEASEHOLD_DB",
      "//host/x.db",
      'LEASEHOLD_DB: expected a file path such as ./data/leasehold.db, got "//host/x.db"',
    ],
    ["LEASEHOLD_STORE", "dynamodb://leases?colour=red", 'LEASEHOLD_STORE: query parameter "colour": not understood'],
    ["LEASEHOLD_TOKENS", "not json", "LEASEHOLD_TOKENS: expected JSON"],
    ["LEASEHOLD_TOKENS", "[]", "LEASEHOLD_TOKENS: expected at least one token, got []"],
    ["AWS_REGION", "EU WEST", 'AWS_REGION: expected an AWS region such as eu-west-1, got "EU WEST"'],
    ["LEASEHOLD_IN_FLIGHT", "1", 'LEASEHOLD_IN_FLIGHT: expected a whole number of requests 2-1000000, got "1"'],
    ["LEASEHOLD_LATE_MS", "5", 'LEASEHOLD_LATE_MS: expected a whole number of milliseconds 10-60000, got "5"'],
    [
      "LEASEHOLD_RESERVED_IN_FLIGHT",
      "512",
      "LEASEHOLD_RESERVED_IN_FLIGHT: expected fewer requests than LEASEHOLD_IN_FLIGHT (512), got 512",
    ],
  ])("%s=%s", (name, value, message) => {
    expect(refusal({ [name]: value }, "node")).toContain(message);
  });

  it("a token is never echoed, even in a refusal", () => {
    const secret = "s".repeat(10);
    const message = refusal(
      { LEASEHOLD_TOKENS: JSON.stringify([{ token: secret, prefixes: [""], verbs: ["read"] }]) },
      "node",
    );
    expect(message).toContain("LEASEHOLD_TOKENS: [0].token: expected a token of at least 16 characters");
    expect(message).not.toContain(secret);
    const url = "https://user:hunter2@api.example/";
    expect(refusal({ LEASEHOLD_STORE: url }, "node")).not.toContain("hunter2");
  });

  it("every problem at once, each named", () => {
    const message = refusal({ PORT: "x", LEASEHOLD_MAX_SKEW_MS: "1s", LEASEHOLD_HEARTBEAT_MS: "-5" }, "node");
    expect(message).toMatch(/^invalid server configuration: /);
    for (const name of ["PORT", "LEASEHOLD_MAX_SKEW_MS", "LEASEHOLD_HEARTBEAT_MS"])
      expect(message).toContain(`${name}: `);
  });

  it("a Worker binding that is not text is refused; a number is its digits", () => {
    expect(refusal({ ...BASE.worker, LEASEHOLD_MAX_SKEW_MS: { ms: 1 } }, "worker")).toContain(
      "LEASEHOLD_MAX_SKEW_MS: expected a string, got an object",
    );
    expect(readServerConfig({ ...BASE.worker, LEASEHOLD_MAX_SKEW_MS: 2000 }, "worker").app.maxSkewMs).toBe(2000);
  });
});

describe("contradictions and the auth rule", () => {
  it.each(ENTRIES)("tokens plus the insecure flag refuse to start on %s", (entry) => {
    const message = refusal({ ...BASE[entry], LEASEHOLD_TOKENS: TOKENS, LEASEHOLD_INSECURE_NO_AUTH: "1" }, entry);
    expect(message).toContain(
      "LEASEHOLD_TOKENS: 1 token given together with LEASEHOLD_INSECURE_NO_AUTH=1: tokens ask for auth, the flag turns it off",
    );
  });

  it("serve's --insecure-no-auth with tokens is the same contradiction, named by its flag", () => {
    expect(refusal({ LEASEHOLD_TOKENS: TOKENS }, "serve", { insecureNoAuth: true })).toContain(
      "1 token given together with --insecure-no-auth",
    );
  });

  it("LEASEHOLD_STORE and LEASEHOLD_DB together are refused; --store overrides both, with a warning", () => {
    const env = { LEASEHOLD_STORE: "memory:", LEASEHOLD_DB: "/tmp/x.db" };
    expect(refusal(env, "node")).toContain("LEASEHOLD_DB: contradicts LEASEHOLD_STORE");
    expect(refusal(env, "serve")).toContain("LEASEHOLD_DB: contradicts LEASEHOLD_STORE");
    const flagged = readServerConfig(env, "serve", { store: "sqlite:/tmp/y.db" });
    expect(flagged.store).toMatchObject({ url: "sqlite:/tmp/y.db", from: "--store" });
    expect(flagged.warnings).toEqual(["LEASEHOLD_DB is ignored: --store names the store"]);
  });

  it("without tokens: loopback only on Node; refused off loopback, naming the way out", () => {
    expect(readServerConfig({ HOST: "::1" }, "node").auth).toEqual({ mode: "none", because: "loopback", host: "::1" });
    expect(readServerConfig({ HOST: "127.0.0.9" }, "serve").auth).toMatchObject({ because: "loopback" });
    expect(refusal({ HOST: "0.0.0.0" }, "node")).toContain(
      "LEASEHOLD_TOKENS: refusing to serve on 0.0.0.0 without tokens: set LEASEHOLD_TOKENS, or LEASEHOLD_INSECURE_NO_AUTH=1 if you really mean it",
    );
    expect(refusal({ HOST: "0.0.0.0" }, "serve")).toContain("or --insecure-no-auth (or LEASEHOLD_INSECURE_NO_AUTH=1)");
    expect(readServerConfig({ HOST: "0.0.0.0", LEASEHOLD_INSECURE_NO_AUTH: "1" }, "node").auth).toMatchObject({
      because: "insecure-flag",
    });
  });

  it("Lambda and Workers have no loopback: no tokens is refused there", () => {
    const { LEASEHOLD_TOKENS: _l, ...lambda } = BASE.lambda;
    expect(refusal(lambda, "lambda")).toContain("LEASEHOLD_TOKENS: not set: the Lambda handler is reachable by anyone");
    expect(refusal({}, "worker")).toContain("LEASEHOLD_TOKENS: not set: the Worker is reachable by anyone");
  });

  it("stores an entry cannot share between instances are refused there, with the reason", () => {
    expect(refusal({ ...BASE.lambda, LEASEHOLD_STORE: "memory:" }, "lambda")).toContain(
      "LEASEHOLD_STORE: the memory store does not run on Lambda: each Lambda instance would keep its own leases",
    );
    expect(refusal({ ...BASE.lambda, LEASEHOLD_STORE: "sqlite:/tmp/x.db" }, "lambda")).toContain(
      "the sqlite store does not run on Lambda",
    );
    const { LEASEHOLD_STORE: _s, ...noStore } = BASE.lambda;
    expect(refusal(noStore, "lambda")).toContain("LEASEHOLD_STORE: not set: expected a shared store");
    expect(refusal({ ...BASE.worker, LEASEHOLD_STORE: "gcs://bucket/leases/" }, "worker")).toContain(
      "the gcs store does not run on Workers",
    );
    expect(refusal({ ...BASE.lambda, LEASEHOLD_STORE: "dynamodb://leases", AWS_REGION: "" }, "lambda")).toContain(
      "LEASEHOLD_STORE: dynamodb:// needs ?region=...",
    );
    expect(refusal({ LEASEHOLD_STORE: "durable-object:LEASES" }, "node")).toContain(
      "LEASEHOLD_STORE: the durable-object store does not run on Node: Durable Objects are reached through a Worker's namespace binding",
    );
    expect(readServerConfig({ ...BASE.worker, LEASEHOLD_STORE: "durable-object:OTHER" }, "worker").store).toMatchObject(
      { spec: { kind: "durable-object", binding: "OTHER" }, from: "LEASEHOLD_STORE" },
    );
  });

  it("the Worker bundles exactly the stores whose declarations say they run on Workers", () => {
    const onWorkers = BACKENDS.filter((b) => b.runtimes.workers === true).map((b) => b.kind);
    expect(Object.keys(WORKER_STORES).sort()).toEqual(onWorkers.sort());
  });
});

describe("serve's flags override the variables", () => {
  it("--port, --host, --store, --insecure-no-auth over PORT, HOST, LEASEHOLD_STORE, LEASEHOLD_INSECURE_NO_AUTH", () => {
    const env = { PORT: "1", HOST: "10.0.0.1", LEASEHOLD_STORE: "memory:", LEASEHOLD_INSECURE_NO_AUTH: "0" };
    const config = readServerConfig(env, "serve", {
      port: 0,
      host: "0.0.0.0",
      store: "sqlite::memory:",
      insecureNoAuth: true,
    });
    expect(config.listen).toEqual({ host: "0.0.0.0", port: 0 });
    expect(config.store).toMatchObject({ url: "sqlite::memory:", from: "--store" });
    expect(config.auth).toEqual({ mode: "none", because: "insecure-flag", flag: "--insecure-no-auth" });
  });

  it("a bad flag value is named by its flag", () => {
    expect(refusal({}, "serve", { store: "nosuch:" })).toContain('--store: scheme: unknown scheme "nosuch:"');
    expect(refusal({}, "serve", { host: "a b" })).toContain("--host: expected a host name");
  });
});

describe("warnings and the start-up line", () => {
  it("an unknown LEASEHOLD_ name is a warning with the likely intended one", () => {
    const config = readServerConfig({ LEASEHOLD_MAX_SKEW: "5000", LEASEHOLD_TERM: "3", OTHER: "x" }, "node");
    expect(config.warnings).toEqual([
      "LEASEHOLD_MAX_SKEW is not a leasehold variable and is ignored (did you mean LEASEHOLD_MAX_SKEW_MS?)",
    ]);
  });

  it("states the real auth mode: the tokens' names and scopes, never a token", () => {
    const two = JSON.stringify([
      { name: "billing", token: TOKEN, prefixes: ["adapters/", "jobs/"], verbs: ["read", "write"] },
      { token: `${TOKEN}-2`, prefixes: [""], verbs: ["read"] },
    ]);
    const config = readServerConfig({ LEASEHOLD_TOKENS: two, HOST: "0.0.0.0" }, "node");
    const line = startupLine(config, "http://0.0.0.0:8787");
    expect(line).toBe(
      'API on http://0.0.0.0:8787; store sqlite:./data/leasehold.db (default); auth: 2 tokens (billing: read+write on "adapters/", "jobs/"; #2: read on all leases); maxSkewMs 1000, watchPollMs 1000, heartbeatMs 15000, storeTimeoutMs 2000, inFlight 512, reservedInFlight 128, lateMs 1000',
    );
    expect(line).not.toContain(TOKEN);
  });

  it("says why there is no auth: the loopback default, or which flag", () => {
    expect(describeAuth(readServerConfig({}, "node").auth)).toBe(
      "none, because LEASEHOLD_TOKENS is unset and the server is bound to loopback 127.0.0.1 (any local process can take any lease)",
    );
    expect(describeAuth(readServerConfig({ LEASEHOLD_INSECURE_NO_AUTH: "1" }, "node").auth)).toBe(
      "none, because of LEASEHOLD_INSECURE_NO_AUTH=1 (anyone who can reach this server can take any lease)",
    );
    expect(describeAuth(readServerConfig({}, "serve", { insecureNoAuth: true }).auth)).toContain(
      "because of --insecure-no-auth",
    );
  });
});

describe("createApp checks its own options", () => {
  const store = new MemoryStore();
  const auth = { insecureNoAuth: true } as const;
  const refused = (options: Record<string, unknown>) => {
    try {
      createApp({ store, auth, ...options });
    } catch (error) {
      expect(error).toBeInstanceOf(LeaseValidationError);
      return (error as Error).message;
    }
    throw new Error("expected createApp to refuse");
  };

  it.each([
    ["maxSkewMs", Number.NaN, "maxSkewMs: expected a whole number of milliseconds 0-60000, got NaN"],
    ["maxSkewMs", -1, "maxSkewMs: expected a whole number of milliseconds 0-60000, got -1"],
    ["maxSkewMs", "1000", 'maxSkewMs: expected a whole number of milliseconds 0-60000, got "1000"'],
    ["watchPollMs", 0, "watchPollMs: expected a whole number of milliseconds 10-3600000, got 0"],
    [
      "watchPollMs",
      Number.POSITIVE_INFINITY,
      "watchPollMs: expected a whole number of milliseconds 10-3600000, got Infinity",
    ],
    ["heartbeatMs", -1, "heartbeatMs: expected a whole number of milliseconds 10-3600000, got -1"],
    ["heartbeatMs", 2.5, "heartbeatMs: expected a whole number of milliseconds 10-3600000, got 2.5"],
  ])("%s = %s", (option, value, message) => {
    expect(refused({ [option]: value })).toBe(`invalid API options: ${message}`);
  });

  it("limits too, and a store that is not one", () => {
    expect(refused({ limits: { bodyBytes: Number.NaN } })).toContain(
      "limits.bodyBytes: expected a whole number of bytes 1024-1048576, got NaN",
    );
    expect(refused({ limits: { listLimit: 0 } })).toContain(
      "limits.listLimit: expected a whole number of leases 1-10000",
    );
    expect(refused({ store: {} })).toContain("store: expected a LeaseStore (an object with get and put)");
  });

  it("admission: its bounds, and a reserved share below inFlight", () => {
    expect(refused({ admission: { inFlight: 1 } })).toContain(
      "admission.inFlight: expected a whole number of requests 2-1000000, got 1",
    );
    expect(refused({ admission: { inFlight: 8, reservedInFlight: 8 } })).toContain(
      "admission.reservedInFlight: expected fewer than inFlight (8) requests, got 8",
    );
    expect(refused({ admission: { lateMs: 0 } })).toContain(
      "admission.lateMs: expected a whole number of milliseconds",
    );
    expect(refused({ admission: { lateness: 5 } })).toContain("admission.lateness: expected a function");
  });

  it("accepts the bounds themselves", () => {
    expect(() =>
      createApp({
        store,
        auth,
        maxSkewMs: 0,
        watchPollMs: 10,
        heartbeatMs: 3_600_000,
        limits: { bodyBytes: 1024, listLimit: 1 },
      }),
    ).not.toThrow();
  });
});
