/**
 * Fenced writes to DynamoDB (`leasehold/fencing/dynamodb`): the item being written keeps the term
 * of its last writer in a number attribute (default `fenceTerm`), and every write carries the
 * condition `attribute_not_exists(fence) OR fence <= :myTerm` and sets the attribute to my term.
 * One request, no read: DynamoDB checks and writes atomically.
 *
 * - `fenceExpression(options)`: the condition and `SET` parts, for commands of your own
 *   (`TransactWriteItems`, a `DynamoDBDocumentClient`).
 * - `fencedPutItem(client, input, options)` / `fencedUpdateItem(...)`: your `PutItem`/`UpdateItem`
 *   input with the fence added (ANDed with your own `ConditionExpression`, if any), sent once.
 *
 * A refusal is a `StaleTermError`. The helpers ask for `ReturnValuesOnConditionCheckFailure:
 * ALL_OLD`, so real DynamoDB returns the item with the failure: `seenTerm` is its stored term, and a
 * failure of *your* condition (stored term <= mine) is rethrown as the SDK's own
 * `ConditionalCheckFailedException`. Emulators that omit that item (dynalite) give `seenTerm:
 * undefined`; there, with a condition of your own, the SDK error is rethrown because the two cannot
 * be told apart. Every other error is the SDK's, untouched: a timeout leaves the outcome unknown,
 * and repeating the same write with the same term is allowed by the fence (make it idempotent: a
 * `PutItem` is, an `ADD` is not).
 *
 * Runtime-neutral (the DynamoDB SDK runs in Node, Lambda and Workers); the SDK is an optional
 * peer, loaded on first import.
 */
import type {
  AttributeValue,
  DynamoDBClient,
  PutItemCommandInput,
  PutItemCommandOutput,
  UpdateItemCommandInput,
  UpdateItemCommandOutput,
} from "@aws-sdk/client-dynamodb";
import { z } from "zod";
import { type FieldIssue, LeaseValidationError } from "../errors.js";
import { zodIssues } from "../lease.js";
import { importPeer } from "../peer.js";
import { admits, FenceCorruptError, parseStoredTerm, StaleTermError, termSchema } from "./fence.js";
import { signalOptions } from "./object-fence.js";

export { FenceCorruptError, StaleTermError } from "./fence.js";

const { PutItemCommand, UpdateItemCommand } = await importPeer(
  "@aws-sdk/client-dynamodb",
  "@aws-sdk/client-dynamodb@3",
  () => import("@aws-sdk/client-dynamodb"),
);

/** The attribute that holds an item's fence unless you name another. */
export const DEFAULT_FENCE_ATTRIBUTE = "fenceTerm";
/** Placeholders the fence adds to the expression maps; yours must not use them. */
export const FENCE_NAME_PLACEHOLDER = "#leaseholdFence";
export const FENCE_VALUE_PLACEHOLDER = ":leaseholdFence";

export interface DynamoDbFenceOptions {
  /** The writer's term (from `runAsLeader`/`elected`): the write applies only if the item's term is <= this. */
  term: number;
  /** Number attribute holding the item's fence. Default "fenceTerm". */
  attribute?: string;
  /** Passed to `client.send`. */
  abortSignal?: AbortSignal;
}

/** The pieces of a fenced write, to merge into a command of your own. */
export interface FenceExpression {
  /** `(attribute_not_exists(#leaseholdFence) OR #leaseholdFence <= :leaseholdFence)`: AND it with yours. */
  condition: string;
  /** `#leaseholdFence = :leaseholdFence`: add it to your `UpdateExpression`'s `SET` clause. */
  set: string;
  /** Merge into `ExpressionAttributeNames`. */
  names: Record<string, string>;
  /** Merge into `ExpressionAttributeValues` (low-level form; with a DocumentClient pass `term` itself). */
  values: Record<string, AttributeValue>;
}

const optionsSchema = z.object({
  term: termSchema,
  attribute: z
    .string({ error: "expected an attribute name" })
    .min(1, { error: "expected a non-empty attribute name" })
    .max(255, { error: "expected at most 255 characters" })
    .default(DEFAULT_FENCE_ATTRIBUTE),
});

export function fenceExpression(options: DynamoDbFenceOptions): FenceExpression {
  const { term, attribute } = parseOptions("DynamoDB fence options", options, []);
  return expressionFor(term, attribute);
}

/**
 * Sends `input` as one `PutItem` that applies only if the item has no fence yet or its fence is
 * <= `options.term`, and stores the term in the item. Throws `StaleTermError` when refused.
 */
export async function fencedPutItem(
  client: DynamoDBClient,
  input: PutItemCommandInput,
  options: DynamoDbFenceOptions,
): Promise<PutItemCommandOutput> {
  const issues = checkInput(input);
  if (input.Item === null || typeof input.Item !== "object") {
    issues.push({ path: "input.Item", message: "expected the item to write" });
  }
  const { term, attribute } = parseOptions("fenced PutItem", options, issues);
  const item = input.Item as Record<string, AttributeValue>;
  const existing = item[attribute];
  if (existing !== undefined && existing.N !== String(term)) {
    throw new LeaseValidationError("fenced PutItem", [
      { path: `input.Item.${attribute}`, message: "is the fence attribute: leave it out, the fence sets it" },
    ]);
  }
  const fence = expressionFor(term, attribute);
  const command = new PutItemCommand({
    ...input,
    Item: { ...item, [attribute]: { N: String(term) } },
    ...merged(input, fence),
  });
  const resource = `DynamoDB table "${input.TableName}"`;
  try {
    return await client.send(command, signalOptions(options.abortSignal));
  } catch (error) {
    throw refusal(error, { resource, term, attribute, ownCondition: input.ConditionExpression !== undefined });
  }
}

/**
 * Sends `input` as one `UpdateItem` that applies only if the item has no fence yet or its fence is
 * <= `options.term`, adding `fence = term` to its `SET` clause (an absent item is created, as
 * `UpdateItem` always does). Throws `StaleTermError` when refused.
 */
export async function fencedUpdateItem(
  client: DynamoDBClient,
  input: UpdateItemCommandInput,
  options: DynamoDbFenceOptions,
): Promise<UpdateItemCommandOutput> {
  const issues = checkInput(input);
  if (input.Key === null || typeof input.Key !== "object") {
    issues.push({ path: "input.Key", message: "expected the key of the item to update" });
  }
  if (input.AttributeUpdates !== undefined) {
    issues.push({ path: "input.AttributeUpdates", message: "use UpdateExpression (the fence is an expression)" });
  }
  const { term, attribute } = parseOptions("fenced UpdateItem", options, issues);
  const fence = expressionFor(term, attribute);
  const command = new UpdateItemCommand({
    ...input,
    UpdateExpression: withSet(input.UpdateExpression, fence.set),
    ...merged(input, fence),
  });
  const resource = `DynamoDB table "${input.TableName}" item ${describeKey(input.Key)}`;
  try {
    return await client.send(command, signalOptions(options.abortSignal));
  } catch (error) {
    throw refusal(error, { resource, term, attribute, ownCondition: input.ConditionExpression !== undefined });
  }
}

function expressionFor(term: number, attribute: string): FenceExpression {
  const n = FENCE_NAME_PLACEHOLDER;
  const v = FENCE_VALUE_PLACEHOLDER;
  return {
    condition: `(attribute_not_exists(${n}) OR ${n} <= ${v})`,
    set: `${n} = ${v}`,
    names: { [n]: attribute },
    values: { [v]: { N: String(term) } },
  };
}

function parseOptions(
  what: string,
  options: DynamoDbFenceOptions,
  issues: FieldIssue[],
): { term: number; attribute: string } {
  const result = optionsSchema.safeParse(options);
  if (!result.success) {
    for (const issue of zodIssues(result.error)) {
      issues.push({ ...issue, path: issue.path === "" ? "options" : `options.${issue.path}` });
    }
  }
  if (issues.length > 0 || !result.success) throw new LeaseValidationError(what, issues);
  return result.data;
}

/** The parts every fenced command needs from its input, and placeholders that would collide. */
function checkInput(input: PutItemCommandInput | UpdateItemCommandInput): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (input === null || typeof input !== "object") return [{ path: "input", message: "expected a command input" }];
  if (typeof input.TableName !== "string" || input.TableName === "") {
    issues.push({ path: "input.TableName", message: "expected a table name" });
  }
  if (input.ExpressionAttributeNames?.[FENCE_NAME_PLACEHOLDER] !== undefined) {
    issues.push({
      path: `input.ExpressionAttributeNames.${FENCE_NAME_PLACEHOLDER}`,
      message: "is reserved for the fence",
    });
  }
  if (input.ExpressionAttributeValues?.[FENCE_VALUE_PLACEHOLDER] !== undefined) {
    issues.push({
      path: `input.ExpressionAttributeValues.${FENCE_VALUE_PLACEHOLDER}`,
      message: "is reserved for the fence",
    });
  }
  if (input.Expected !== undefined || input.ConditionalOperator !== undefined) {
    issues.push({ path: "input.Expected", message: "use ConditionExpression (the fence is an expression)" });
  }
  return issues;
}

/** The condition (yours AND the fence's), the merged maps, and ALL_OLD so a refusal names the term. */
function merged(
  input: PutItemCommandInput | UpdateItemCommandInput,
  fence: FenceExpression,
): Pick<
  PutItemCommandInput,
  | "ConditionExpression"
  | "ExpressionAttributeNames"
  | "ExpressionAttributeValues"
  | "ReturnValuesOnConditionCheckFailure"
> {
  return {
    ConditionExpression:
      input.ConditionExpression === undefined
        ? fence.condition
        : `(${input.ConditionExpression}) AND ${fence.condition}`,
    ExpressionAttributeNames: { ...input.ExpressionAttributeNames, ...fence.names },
    ExpressionAttributeValues: { ...input.ExpressionAttributeValues, ...fence.values },
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  };
}

/**
 * Adds the fence's assignment to the `SET` clause (an expression may have only one), or appends a
 * `SET` clause. The keyword is found outside placeholders (`#set`, `:set` are names, not clauses);
 * DynamoDB reserves SET, so it cannot be a bare attribute name either.
 */
export function withSet(expression: string | undefined, assignment: string): string {
  if (expression === undefined || expression.trim() === "") return `SET ${assignment}`;
  const clause = /(?<![#:\w])SET(?!\w)/i.exec(expression);
  if (clause === null) return `${expression} SET ${assignment}`;
  const at = clause.index + clause[0].length;
  return `${expression.slice(0, at)} ${assignment},${expression.slice(at)}`;
}

/** A `ConditionalCheckFailedException` read with ALL_OLD's item; anything else is returned as is. */
function refusal(
  error: unknown,
  context: { resource: string; term: number; attribute: string; ownCondition: boolean },
): unknown {
  if ((error as { name?: unknown } | null)?.name !== "ConditionalCheckFailedException") return error;
  const { resource, term, attribute, ownCondition } = context;
  const item = (error as { Item?: Record<string, AttributeValue> }).Item;
  if (item === undefined) {
    // Without the item: the fence alone cannot fail on an absent item, so with no condition of
    // the caller's the fence refused. With one, the two are indistinguishable.
    return ownCondition ? error : new StaleTermError(resource, term, undefined, { cause: error });
  }
  const stored = item[attribute];
  if (stored === undefined) return error; // no fence yet: the caller's own condition failed
  if (stored.N === undefined) return new FenceCorruptError(resource, stored, { cause: error });
  const seen = parseStoredTerm(resource, stored.N);
  if (!admits(seen, term)) return new StaleTermError(resource, term, seen, { cause: error });
  return error; // the fence passed: the caller's own condition failed
}

function describeKey(key: Record<string, AttributeValue> | undefined): string {
  const parts = Object.entries(key ?? {}).map(([k, v]) => `${k}=${v.S ?? v.N ?? "(binary)"}`);
  return `{${parts.join(", ")}}`;
}
