/**
 * Request and response schemas of the HTTP API, shared by the server (validation + OpenAPI)
 * and the typed client. Field rules come from src/lease.ts so every entry point agrees.
 */
import { z } from "@hono/zod-openapi";
// Schemas from src/lease.ts were built before zod-openapi extended zod (zod 4 adds methods per
// instance), so they carry documentation through zod's own `.meta()`, which the generator reads.
import { holderSchema, leaseMsSchema, metadataSchema, nameSchema, prefixSchema } from "../lease.js";

const term = z
  .number({ error: "expected a number" })
  .int({ error: "expected a whole number" })
  .positive({ error: "expected a term of at least 1" })
  .openapi({ description: "Fencing token of the lease" });

export const NameParam = z.object({
  name: z.string().openapi({
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
  .openapi("AcquireRequest");

export const TermBody = z
  .strictObject({ holder: holderSchema.meta({ example: "billing-7f9c" }), term })
  .openapi("HolderTermRequest");

/** The raw compare-and-swap write used by the HTTP store; the server stamps acquiredAt/renewedAt. */
export const RecordBody = z
  .strictObject({
    holder: holderSchema.nullable(),
    term: z.number().int().nonnegative({ error: "expected a non-negative whole number" }),
    leaseMs: leaseMsSchema,
    metadata: metadataSchema,
    writeId: z.string().min(1).max(64),
  })
  .openapi("RecordWrite");

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
    expiresAt: z.number().int().openapi({ description: "renewedAt + leaseMs (server wall clock, ms)" }),
    metadata: z.record(z.string(), z.string()),
    writeId: z.string(),
    revision: z.string(),
  })
  .openapi("Lease");

export const LeaseResult = z.object({ leader: z.boolean(), lease: Lease }).openapi("LeaseResult");

export const LeaseList = z.object({ leases: z.array(Lease), next: z.string().nullable() }).openapi("LeaseList");

export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    lease: Lease.optional(),
    leader: z.boolean().optional(),
    rule: z.string().optional().openapi({ description: "The term rule a refused write broke (409 term-rule)" }),
  })
  .openapi("Problem");

export type LeaseView = z.infer<typeof Lease>;
export type LeaseResultView = z.infer<typeof LeaseResult>;
export type LeaseListView = z.infer<typeof LeaseList>;
export type ProblemView = z.infer<typeof Problem>;
export type RecordWrite = z.infer<typeof RecordBody>;
