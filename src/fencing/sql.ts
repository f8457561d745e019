/**
 * What the SQL fences share (`leasehold/fencing/sqlite`, `leasehold/fencing/postgres`): their
 * options (a table, the row's key, the columns to set, the writer's term and the fence column),
 * checked by one schema that names each bad field; identifiers quoted so any name is safe; and how
 * a row is named in errors. The statements themselves are each backend's (SQLite's `?`,
 * PostgreSQL's `$n`). Runtime-neutral.
 */
import { z } from "zod";
import { LeaseValidationError } from "../errors.js";
import { zodIssues } from "../lease.js";
import { termSchema } from "./fence.js";

export interface SqlFenceOptions<Value> {
  /** Table name (quoted as an identifier; `schema.table` is not split). */
  table: string;
  /** The row's key columns and values: the fenced resource. With insert-if-absent they must be the table's primary key or a unique index. */
  key: Record<string, Value>;
  /**
   * Columns to write. With insert-if-absent they must make a valid new row (every NOT NULL column
   * without a default). Empty with `insertIfAbsent: false`: only the fence moves up to `term` (a
   * new leader claiming a row).
   */
  set: Record<string, Value>;
  /** The writer's term: the write applies only if the row's term is NULL or <= this. */
  term: number;
  /** Integer column holding the row's fence. Default "term". */
  termColumn?: string;
  /** Insert the row when it is absent (an upsert). Default true; false returns "absent" instead. */
  insertIfAbsent?: boolean;
}

/** "written": the row was inserted or updated. "absent": no such row and `insertIfAbsent: false`. */
export type FencedUpdateOutcome = "written" | "absent";

export const identifier = z
  .string({ error: "expected a column name" })
  .min(1, { error: "expected a non-empty name" })
  .max(128, { error: "expected at most 128 characters" })
  .refine((s) => !s.includes("\0"), { error: "expected no NUL character" });

/** Each kind of value a driver may bind: how it is recognised, and its name in errors. */
const VALUE_KINDS = {
  string: { is: (v: unknown) => typeof v === "string", name: "a string" },
  number: { is: (v: unknown) => typeof v === "number" && Number.isFinite(v), name: "a finite number" },
  bigint: { is: (v: unknown) => typeof v === "bigint", name: "a bigint" },
  boolean: { is: (v: unknown) => typeof v === "boolean", name: "a boolean" },
  bytes: { is: (v: unknown) => v instanceof Uint8Array, name: "a Uint8Array" },
  date: { is: (v: unknown) => v instanceof Date && !Number.isNaN(v.getTime()), name: "a valid Date" },
} as const;

/**
 * The schema of a value the driver binds: null or one of `kinds`. One table for both SQL fences,
 * so each names the values it accepts the same way.
 */
function sqlValueSchema<Value>(kinds: ReadonlyArray<keyof typeof VALUE_KINDS>): z.ZodType<Value> {
  const accepted = kinds.map((kind) => VALUE_KINDS[kind]);
  return z.custom<Value>((v) => v === null || accepted.some((kind) => kind.is(v)), {
    error: `expected ${accepted.map((kind) => kind.name).join(", ")} or null`,
  });
}

/**
 * The parser of a fenced update's options whose values are null or of the driver's `kinds`, with
 * their defaults: built once per driver, so a fenced update (on SQLite, a synchronous path) does not
 * build its schema again on every call.
 */
export function fenceOptionsParser<Value>(
  kinds: ReadonlyArray<keyof typeof VALUE_KINDS>,
): (options: unknown) => Required<SqlFenceOptions<Value>> {
  const value = sqlValueSchema<Value>(kinds);
  const schema = z
    .strictObject({
      table: identifier,
      key: z
        .record(
          identifier,
          value.refine((v) => v !== null, { error: "expected a value (a key is never NULL)" }),
        )
        .refine((k) => Object.keys(k).length > 0, { error: "expected at least one key column" }),
      set: z.record(identifier, value),
      term: termSchema,
      termColumn: identifier.default("term"),
      insertIfAbsent: z.boolean({ error: "expected true or false" }).default(true),
    })
    .superRefine((o, ctx) => {
      const keys = new Set(Object.keys(o.key));
      for (const column of Object.keys(o.set)) {
        if (keys.has(column)) ctx.addIssue({ code: "custom", path: ["set", column], message: "is a key column" });
      }
      if (keys.has(o.termColumn) || Object.hasOwn(o.set, o.termColumn)) {
        ctx.addIssue({ code: "custom", path: ["termColumn"], message: "the fence column must not be in key or set" });
      }
    });
  return (options) => {
    const result = schema.safeParse(options);
    if (!result.success) throw new LeaseValidationError("fencedUpdate options", zodIssues(result.error));
    return result.data as Required<SqlFenceOptions<Value>>;
  };
}

/** An SQL identifier, quoted: any name is safe, none is interpreted as SQL. */
export function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `table "t" row {"id":"x"}`: the fenced resource, in errors. */
export function rowResource(table: string, key: Record<string, unknown>): string {
  const described = JSON.stringify(key, (_k, v: unknown) =>
    typeof v === "bigint" ? v.toString() : v instanceof Uint8Array ? "(bytes)" : v,
  );
  return `table "${table}" row ${described}`;
}
