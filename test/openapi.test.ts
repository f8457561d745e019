/**
 * The served OpenAPI document is the API's contract (docs/design.md §5): valid OpenAPI 3.1 (checked
 * against the official schema by @seriousme/openapi-schema-validator), naming every route Hono
 * serves and only those, with patterns that mean one thing to every regex engine, bounded
 * integers, readable operationIds and security that tells the truth about the server serving it.
 * Schemathesis (test/schemathesis.test.ts) and a generated Go client (test/go-client.test.ts)
 * check the same document from the outside.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/api/app.js";
import { HOLDER_PATTERN, holderSchema, NAME_PATTERN } from "../src/lease.js";
import { MAX_GROUP_LENGTH, MEMBER_ID_PATTERN } from "../src/sharding/layout.js";
import { MemoryStore } from "../src/stores/memory.js";
import { TOKEN_SCOPES } from "./support/api-server.js";

type Operation = {
  operationId: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema: Record<string, unknown> }>;
  requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, { headers?: Record<string, { required?: boolean }>; content?: Record<string, unknown> }>;
};
type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, { properties?: Record<string, Record<string, unknown>>; required?: string[] }>;
    securitySchemes?: Record<string, { type: string; scheme: string }>;
    responses?: Record<string, { headers?: Record<string, unknown> }>;
  };
};

const servers = {
  tokens: createApp({ store: new MemoryStore(), auth: { tokens: TOKEN_SCOPES } }),
  "no auth": createApp({ store: new MemoryStore(), auth: { insecureNoAuth: true } }),
};

async function documentOf(app: (typeof servers)["tokens"]): Promise<Document> {
  const res = await app.request("/openapi.json");
  expect(res.status).toBe(200);
  return (await res.json()) as Document;
}

const operations = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
  );

/** Every `pattern` anywhere in the document. */
function patterns(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(patterns);
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, v]) => (key === "pattern" && typeof v === "string" ? [v] : patterns(v)));
}

describe.each(Object.entries(servers))("the document served %s", (mode, app) => {
  const secured = mode === "tokens";

  it("is valid OpenAPI 3.1 and every reference resolves", async () => {
    const validator = new Validator();
    const result = await validator.validate(await documentOf(app));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(() => validator.resolveRefs()).not.toThrow();
  });

  it("lists exactly the routes Hono serves", async () => {
    const doc = await documentOf(app);
    const served = new Set(
      app.routes
        .filter((r) => r.method !== "ALL" && !r.path.includes("*"))
        .map((r) => `${r.method} ${r.path.replace(/:([^/]+)/g, "{$1}")}`),
    );
    const documented = new Set(operations(doc).map((o) => `${o.method} ${o.path}`));
    expect([...served].sort()).toEqual([...documented].sort());
    expect(documented.size).toBe(13);
  });

  it("names each operation for generated code", async () => {
    const ids = operations(await documentOf(app)).map((o) => o.op.operationId);
    expect(ids.sort()).toEqual(
      [
        "acquireLease",
        "renewLease",
        "releaseLease",
        "getLease",
        "putLease",
        "listLeases",
        "watchLease",
        "heartbeatMember",
        "confirmHandoff",
        "leaveGroup",
        "health",
        "metrics",
        "openapiDocument",
      ].sort(),
    );
  });

  it(`declares security as this server enforces it (${secured ? "bearer on /v1 and /metrics" : "none"})`, async () => {
    const doc = await documentOf(app);
    for (const { path, op } of operations(doc)) {
      const v1 = path.startsWith("/v1/") || path === "/metrics";
      if (secured && v1) expect(op.security, path).toEqual([{ bearer: [] }]);
      else expect(op.security ?? [], path).toEqual([]);
      const answers = Object.keys(op.responses);
      expect(answers.includes("401") && answers.includes("403"), path).toBe(secured && v1);
      if (secured && v1) expect(op.responses["401"]?.headers?.["WWW-Authenticate"]?.required).toBe(true);
    }
    expect(doc.components.securitySchemes).toEqual(
      secured ? { bearer: expect.objectContaining({ type: "http", scheme: "bearer" }) } : undefined,
    );
  });

  it("declares the headers and media types the server uses", async () => {
    const doc = await documentOf(app);
    const op = (path: string, method: string) => doc.paths[path]![method]!;
    for (const [path, method, statuses] of [
      ["/v1/leases/{name}/acquire", "post", ["200"]],
      ["/v1/leases/{name}/renew", "post", ["200"]],
      ["/v1/leases/{name}/release", "post", ["200"]],
      ["/v1/leases/{name}", "get", ["200"]],
      ["/v1/leases/{name}", "put", ["200", "201"]],
    ] as const) {
      for (const status of statuses) expect(op(path, method).responses[status]?.headers?.ETag?.required).toBe(true);
    }
    for (const { op: o } of operations(doc).filter((x) => x.path.startsWith("/v1/"))) {
      expect(o.responses["503"]?.headers?.["Retry-After"]?.required, o.operationId).toBe(true);
      const over = o.responses["429"];
      if (over) expect(over.headers?.["Retry-After"]?.required, o.operationId).toBe(true);
      expect(Object.keys(o.responses["400"]?.content ?? {}), o.operationId).toEqual(["application/problem+json"]);
    }
    const put = op("/v1/leases/{name}", "put");
    expect(put.parameters?.filter((p) => p.in === "header").map((p) => [p.name, p.required])).toEqual([
      ["If-Match", false],
      ["If-None-Match", false],
      ["Leasehold-Instance", true],
    ]);
    expect(Object.keys(put.responses)).toEqual(expect.arrayContaining(["409", "412", "413", "415", "428"]));
    const watch = op("/v1/leases/{name}/watch", "get");
    expect(watch.parameters?.find((p) => p.in === "header")?.name).toBe("Last-Event-ID");
    expect(Object.keys(watch.responses["200"]?.content ?? {})).toEqual(["text/event-stream"]);
    expect(Object.keys(op("/metrics", "get").responses["200"]?.content ?? {})).toEqual(["text/plain"]);
    expect(doc.components.responses?.MethodNotAllowed?.headers).toHaveProperty("Allow");
  });

  it("puts the name's pattern and length on every path parameter, and says how it is encoded", async () => {
    for (const { path, op } of operations(await documentOf(app))) {
      const params = op.parameters?.filter((p) => p.in === "path") ?? [];
      if (path.includes("{group}")) {
        // A group's name is a lease name short enough for every record name of the group.
        const [group, member] = params;
        expect(group?.schema).toMatchObject({
          type: "string",
          minLength: 1,
          maxLength: MAX_GROUP_LENGTH,
          pattern: NAME_PATTERN.source,
        });
        expect(JSON.stringify(group)).toContain("%2F");
        expect(member?.schema).toMatchObject({ type: "string", maxLength: 64, pattern: MEMBER_ID_PATTERN.source });
        continue;
      }
      const name = params[0];
      if (!path.includes("{name}")) {
        expect(name).toBeUndefined();
        continue;
      }
      expect(name?.schema).toMatchObject({
        type: "string",
        minLength: 1,
        maxLength: 192,
        pattern: NAME_PATTERN.source,
      });
      expect(JSON.stringify(name)).toContain("%2F");
    }
  });

  it("bounds every integer a client sends, terms and times at 2^53-1", async () => {
    const { schemas } = (await documentOf(app)).components;
    expect(schemas.HolderTermRequest?.properties?.term).toMatchObject({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
    expect(schemas.RecordWrite?.properties?.term).toMatchObject({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
    expect(schemas.RecordWrite?.properties?.acquiredAt).toMatchObject({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
    for (const body of ["AcquireRequest", "RecordWrite", "HeartbeatRequest"]) {
      expect(schemas[body]?.properties?.leaseMs).toMatchObject({ minimum: 10, maximum: 86_400_000 });
    }
    for (const [body, field] of [
      ["HeartbeatRequest", "session"],
      ["HandoffConfirmation", "session"],
      ["HandoffConfirmation", "term"],
      ["LeaveRequest", "session"],
    ] as const) {
      expect(schemas[body]?.properties?.[field], `${body}.${field}`).toMatchObject({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
      });
    }
    expect(schemas.HeartbeatRequest?.properties?.buckets).toMatchObject({ minimum: 1, maximum: 4096 });
    expect(schemas.HandoffConfirmation?.properties?.bucket).toMatchObject({ minimum: 0, maximum: 4095 });
  });

  it("has satisfiable request bodies: one plain object each, whose required fields it defines", async () => {
    const doc = await documentOf(app);
    for (const { op } of operations(doc)) {
      const ref = op.requestBody?.content["application/json"]?.schema.$ref as string | undefined;
      if (!op.requestBody) continue;
      const schema = doc.components.schemas[ref?.replace("#/components/schemas/", "") ?? ""] as Record<string, unknown>;
      expect(schema, op.operationId).toMatchObject({ type: "object", additionalProperties: false });
      for (const keyword of ["allOf", "anyOf", "oneOf", "not"])
        expect(schema, op.operationId).not.toHaveProperty(keyword);
      for (const field of (schema.required as string[]) ?? []) {
        expect(schema.properties, `${op.operationId}.${field}`).toHaveProperty(field);
      }
    }
  });

  it("uses patterns without JavaScript flags that mean the same with and without the u flag", async () => {
    const found = new Set(patterns(await documentOf(app)));
    expect(found).toContain(HOLDER_PATTERN.source);
    expect(found).toContain(NAME_PATTERN.source);
    const probes = [
      "a",
      "adapters/billing",
      "billing-7f9c",
      "\u00e9t\u00e9",
      "\u{1F600}",
      "a\nb",
      "\u0085",
      '"7"',
      "*",
      "",
    ];
    for (const pattern of found) {
      expect(pattern, pattern).not.toMatch(/\/[gimsuyv]*$/);
      const plain = new RegExp(pattern);
      const unicode = new RegExp(pattern, "u");
      for (const probe of probes)
        expect(unicode.test(probe), `${pattern} on ${JSON.stringify(probe)}`).toBe(plain.test(probe));
    }
  });
});

describe("the holder rule", () => {
  it("is the published pattern: what it accepts the server accepts, what it refuses the server refuses", async () => {
    const app = servers["no auth"];
    const published = new RegExp(HOLDER_PATTERN.source, "u");
    const holders = [
      "billing-7f9c",
      "pod a",
      "\u00e9t\u00e9",
      "\u{1F600}",
      "\u00a0",
      "a\u0000",
      "a\tb",
      "\u007f",
      "\u0085",
      "x\u009f",
    ];
    for (const holder of holders) {
      const res = await app.request("/v1/leases/holders/acquire", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ holder, instance: "holder-rule-instance-0001", leaseMs: 10 }),
      });
      const accepted = res.status !== 400;
      expect(accepted, JSON.stringify(holder)).toBe(published.test(holder));
      expect(holderSchema.safeParse(holder).success, JSON.stringify(holder)).toBe(accepted);
    }
  });
});
