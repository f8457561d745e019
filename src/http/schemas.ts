/**
 * The wire contract of the HTTP API: request and response schemas shared by the server
 * (validation and the OpenAPI document) and the client side (the typed client, the HTTP store,
 * the SSE reader). Neither side owns it, so the client never imports the server. Field rules
 * come from src/lease.ts so every entry point agrees. Plain zod: documentation rides on zod's own
 * `.meta()` (`id` names a component), which the server's OpenAPI generator reads, so a client
 * bundle needs no OpenAPI code. Runtime-neutral.
 */
import { z } from "zod";
import { holderSchema, leaseMsSchema, metadataSchema, nameSchema, prefixSchema } from "../lease.js";

const term = z
  .number({ error: "expected a number" })
  .int({ error: "expected a whole number" })
  .positive({ error: "expected a term of at least 1" })
  .meta({ description: "Fencing token of the lease" });

export const NameParam = z.object({
  name: z.string().meta({
    param: { name: "name", in: "path" },
    example: "adapters/billing",
    description: "URL-encoded lease name",
  }),
});

export const AcquireBody = z
  .strictObject({
    holder: holderSchema.meta({ example: "billing-7f9c" }),
    leaseMs: leaseMsSchema.meta({ example: 15000 }),
    metadata: metadataSchema.optional().meta({ example: { addr: "10.0.0.7:8080" } }),
  })
  .meta({ id: "AcquireRequest" });

export const TermBody = z
  .strictObject({ holder: holderSchema.meta({ example: "billing-7f9c" }), term })
  .meta({ id: "HolderTermRequest" });

/**
 * The raw compare-and-swap write used by the HTTP store: the whole record but `renewedAt`, which
 * the server stamps with its own clock. `acquiredAt` is the writer's (informational).
 */
export const RecordBody = z
  .strictObject({
    holder: holderSchema.nullable(),
    term: z.number().int().nonnegative({ error: "expected a non-negative whole number" }),
    leaseMs: leaseMsSchema,
    metadata: metadataSchema,
    writeId: z.string().min(1).max(64),
    acquiredAt: z
      .number({ error: "expected wall-clock milliseconds" })
      .int({ error: "expected whole milliseconds" })
      .nonnegative({ error: "expected a non-negative number" }),
  })
  .meta({ id: "RecordWrite" });

export const ListQuery = z.object({
  prefix: prefixSchema.optional().meta({ example: "adapters/" }),
  limit: z.coerce
    .number({ error: "expected a number" })
    .int({ error: "expected a whole number" })
    .min(1, { error: "expected at least 1" })
    .max(1000, { error: "expected at most 1000" })
    .optional(),
  cursor: nameSchema.optional().meta({ description: "The `next` value of the previous page" }),
});

export const Lease = z
  .object({
    name: z.string(),
    holder: z.string().nullable(),
    term: z.number().int(),
    leaseMs: z.number().int(),
    acquiredAt: z.number().int(),
    renewedAt: z.number().int(),
    expiresAt: z.number().int().meta({ description: "renewedAt + leaseMs (server wall clock, ms)" }),
    metadata: z.record(z.string(), z.string()),
    writeId: z.string(),
    revision: z.string(),
  })
  .meta({ id: "Lease" });

export const LeaseResult = z.object({ leader: z.boolean(), lease: Lease }).meta({ id: "LeaseResult" });

export const LeaseList = z.object({ leases: z.array(Lease), next: z.string().nullable() }).meta({ id: "LeaseList" });

export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    lease: Lease.optional(),
    leader: z.boolean().optional(),
    rule: z.string().optional().meta({ description: "The term rule a refused write broke (409 term-rule)" }),
  })
  .meta({ id: "Problem" });

export type LeaseView = z.infer<typeof Lease>;
export type LeaseResultView = z.infer<typeof LeaseResult>;
export type LeaseListView = z.infer<typeof LeaseList>;
export type ProblemView = z.infer<typeof Problem>;
export type RecordWrite = z.infer<typeof RecordBody>;
