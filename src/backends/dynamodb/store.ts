/**
 * DynamoDB store: one item per lease in a table whose partition key (default `pk`, a string)
 * is the lease name. The store creates its `DynamoDBClient` from `region`, `endpoint` and
 * `credentials` (and destroys it on `close()`), or takes the caller's own (any retry settings,
 * middleware), which it never destroys. Options and the `dynamodb://` URL: src/backends/dynamodb/backend.ts.
 *
 * Item layout: the key, a numeric `rev` (the CAS token, a decimal string in `Stored.revision`)
 * and the record's fields as native attributes (`holder` S or NULL, `term`/`leaseMs`/
 * `acquiredAt`/`renewedAt` N, `metadata` M of S, `writeId` S, a scheduled job's `fire` M of `at` N
 * and `done` BOOL). Native attributes rather than one
 * JSON string because operators read and filter leases in the console and CLI
 * (`--filter-expression "holder = :me"`), and the TTL attribute must be a number anyway. Every
 * read goes through `parseRecord`: an item with a missing, mistyped or out-of-range field, or
 * without a numeric `rev` (a foreign item), raises `LeaseCorruptError` and is never overwritten.
 * Attributes leasehold does not write are ignored on read and dropped by the next write
 * (`PutItem` replaces the whole item). The usual one is a TTL attribute left over from when TTL
 * was on, and dropping it is what turning TTL off should do.
 *
 * Writes: each CAS is exactly one `PutItem` with `attribute_not_exists(#pk)` (create) or
 * `#rev = :rev` (replace) and `ReturnValuesOnConditionCheckFailure: ALL_OLD`, so a conflict
 * carries the current record with no second request. Emulators that omit the item (dynalite)
 * cost one `ConsistentRead` `GetItem` instead. Reads are `ConsistentRead: true`.
 *
 * `getMany(names)`: one `BatchGetItem` (`ConsistentRead: true`) per 100 names, DynamoDB's limit,
 * sent one after another. Keys DynamoDB leaves unprocessed (it returns them under throttling or
 * past 16 MB) are asked for again after a pause that doubles each time (25 ms, then 50, ...), up
 * to 6 requests in all, then the call fails naming how many were left. Each item costs the same
 * read units as its `GetItem`; what a batch saves is requests and round trips (the API's watch
 * hub re-reads every watched lease each interval: 100 leases, one request).
 *
 * Retries: the store itself never retries, but the SDK does (transient errors, throttling). A
 * retried `PutItem` whose first attempt applied fails its own condition. The store does not decide
 * what that means: it reports the conflict with the current record, which then carries this
 * write's own `writeId`, and the one write path (src/elector/cas.ts) counts it as applied. When
 * the SDK retried and the current record cannot be read, `put` throws an ambiguous
 * `LeaseStoreError` instead, since an earlier attempt may have applied.
 *
 * Errors: throttling (ProvisionedThroughputExceeded, Throttling, RequestLimitExceeded), timeouts,
 * aborts, network errors and 5xx are `LeaseStoreError` with `ambiguous: true` on writes. So is
 * any error after the SDK retried, because an earlier attempt may have applied. A 4xx on the
 * first attempt (validation, missing table, access denied) is `ambiguous: false`. Reads never
 * change anything, so their errors are never ambiguous.
 *
 * `list(prefix)`: the lease name is the partition key, so a prefix listing is a paginated `Scan`
 * with a `begins_with` filter. Scan order is hash order, so matches are sorted by name before
 * `startAfter`/`limit` apply. It reads the whole table, which is fine for a lease table (one item
 * per lease, small) and for status pages, and wrong for a hot path. A key schema that allows
 * `Query` would put every lease into one partition, capping the whole table at one partition's
 * write rate; renewals are the hot path, listing is not.
 *
 * TTL (opt-in, `ttlAttribute`): every write stamps epoch seconds
 * `renewedAt/1000 + leaseMs/1000 + ttlGraceSeconds` (default grace 7 days, at least 1 day), so
 * DynamoDB may delete a lease once nobody has written it for a long time. A deleted record
 * restarts its terms at 1: the next holder gets term 1 again, and fencing tokens are reused.
 * Turn TTL on only for short-lived lease names whose terms nobody checks after they are
 * abandoned (no downstream system holds on to a term), never for a lease guarding a fenced
 * resource. The attribute needs the table's TTL setting enabled on that name (infra/aws does this).
 */
import type { AttributeValue, ConditionalCheckFailedException, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { z } from "zod";
import {
  type FieldIssue,
  isLeaseCorruptError,
  LeaseConflictError,
  LeaseCorruptError,
  LeaseStoreError,
} from "../../errors.js";
import type { CallOptions, LeaseRecord, LeaseStore, ListOptions, Stored } from "../../lease.js";
import { type Listed, PROTOCOL_FIELDS, parseRecord, validate, validatePrefix } from "../../lease.js";
import { orUnreadable, storedAt } from "../../listing.js";
import { importPeer } from "../../peer.js";
import { CounterStore } from "../counter-store.js";
import {
  DEFAULT_TTL_GRACE_SECONDS,
  type DynamoDbStoreOptions,
  dynamoDbOptionsSchema,
  RECORD_ATTRIBUTES,
  REV,
} from "./backend.js";

const {
  BatchGetItemCommand,
  DynamoDBClient: DynamoDBClientClass,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
} = await importPeer(
  "@aws-sdk/client-dynamodb",
  "@aws-sdk/client-dynamodb@3",
  () => import("@aws-sdk/client-dynamodb"),
);

export {
  DEFAULT_TTL_GRACE_SECONDS,
  type DynamoDbStoreOptions,
  MIN_TTL_GRACE_SECONDS,
} from "./backend.js";

type Item = Record<string, AttributeValue>;

const THROTTLING = new Set([
  "ProvisionedThroughputExceededException",
  "ThrottlingException",
  "RequestLimitExceeded",
  "Throttling",
]);
const ABORTED = new Set(["AbortError", "TimeoutError", "RequestTimeout", "RequestTimeoutException"]);

export class DynamoDbStore extends CounterStore implements LeaseStore {
  readonly table: string;
  readonly partitionKey: string;
  readonly ttlAttribute: string | undefined;
  readonly ttlGraceSeconds: number;
  private readonly scanPageSize: number | undefined;
  private readonly client: DynamoDBClient;
  /** Only a client this store created is destroyed by `close()`. */
  private readonly ownsClient: boolean;

  /** BatchGetItem takes at most 100 keys. */
  protected readonly readBatchSize = BATCH_GET_KEYS;

  constructor(options: DynamoDbStoreOptions) {
    super();
    const o = validate("DynamoDbStore options", dynamoDbOptionsSchema, options);
    this.ownsClient = o.client === undefined;
    this.client =
      o.client ??
      new DynamoDBClientClass({
        ...(o.region === undefined ? {} : { region: o.region }),
        ...(o.endpoint === undefined ? {} : { endpoint: o.endpoint }),
        ...(o.credentials === undefined ? {} : { credentials: o.credentials }),
      });
    this.table = o.table;
    this.partitionKey = o.partitionKey;
    this.ttlAttribute = o.ttlAttribute;
    this.ttlGraceSeconds = o.ttlGraceSeconds ?? DEFAULT_TTL_GRACE_SECONDS;
    this.scanPageSize = o.scanPageSize;
  }

  protected async write(
    record: LeaseRecord,
    previous: number | null,
    options: CallOptions | undefined,
  ): Promise<Stored> {
    const revision = String((previous ?? 0) + 1);
    const command = new PutItemCommand({
      TableName: this.table,
      Item: this.encode(record, revision),
      ...(previous === null
        ? { ConditionExpression: "attribute_not_exists(#pk)", ExpressionAttributeNames: { "#pk": this.partitionKey } }
        : {
            ConditionExpression: "#rev = :rev",
            ExpressionAttributeNames: { "#rev": REV },
            ExpressionAttributeValues: { ":rev": { N: String(previous) } },
          }),
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    });
    try {
      await this.client.send(command, sendOptions(options));
      return { record, revision };
    } catch (error) {
      if (errorName(error) !== "ConditionalCheckFailedException")
        throw this.failure("PutItem", record.name, error, true);
      return this.resolveConflict(record, error as ConditionalCheckFailedException, options);
    }
  }

  /** One BatchGetItem of at most 100 keys, and again for its unprocessed keys, with a growing pause. */
  protected async readBatch(
    keys: string[],
    found: Map<string, Stored>,
    options: CallOptions | undefined,
  ): Promise<void> {
    let pending: Item[] = keys.map((key) => ({ [this.partitionKey]: { S: key } }));
    for (let request = 1; ; request++) {
      const out = await this.call("BatchGetItem", keys[0]!, () =>
        this.client.send(
          new BatchGetItemCommand({ RequestItems: { [this.table]: { Keys: pending, ConsistentRead: true } } }),
          sendOptions(options),
        ),
      );
      for (const item of out.Responses?.[this.table] ?? []) {
        const key = item[this.partitionKey]?.S;
        if (key !== undefined) found.set(key, this.decode(key, item));
      }
      pending = out.UnprocessedKeys?.[this.table]?.Keys ?? [];
      if (pending.length === 0) return;
      if (request >= BATCH_GET_REQUESTS) {
        throw new LeaseStoreError(
          `DynamoDB BatchGetItem on table "${this.table}": ${pending.length} of ${keys.length} keys still unprocessed after ${request} requests (throttled or over 16 MB)`,
          { ambiguous: false },
        );
      }
      await pause(25 * 2 ** (request - 1), options?.signal);
    }
  }

  /** Destroys the client if this store created it. */
  async close(): Promise<void> {
    if (this.ownsClient) this.client.destroy();
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Listed> {
    validatePrefix(prefix);
    if (options.startAfter !== undefined) {
      validate("list options", z.object({ startAfter: z.string({ error: "expected a lease name" }) }), options);
    }
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    if (limit <= 0) return;
    const matches = await this.scanPrefix(prefix, options.startAfter);
    // Decoded only within the window, so a corrupt item elsewhere does not break this page.
    for (const { name, item } of matches.slice(0, limit)) yield orUnreadable(() => this.decode(name, item));
  }

  /** Every item whose key starts with `prefix` (and sorts after `startAfter`), sorted by key. */
  private async scanPrefix(
    prefix: string,
    startAfter: string | undefined,
  ): Promise<Array<{ name: string; item: Item }>> {
    const filters: string[] = [];
    const values: Item = {};
    // An empty prefix matches everything; DynamoDB rejects an empty begins_with operand.
    if (prefix !== "") {
      filters.push("begins_with(#pk, :prefix)");
      values[":prefix"] = { S: prefix };
    }
    if (startAfter !== undefined && startAfter !== "") {
      filters.push("#pk > :after");
      values[":after"] = { S: startAfter };
    }
    const out: Array<{ name: string; item: Item }> = [];
    let startKey: Item | undefined;
    do {
      const page = await this.call("Scan", prefix, () =>
        this.client.send(
          new ScanCommand({
            TableName: this.table,
            ConsistentRead: true,
            ...(filters.length > 0
              ? {
                  FilterExpression: filters.join(" AND "),
                  ExpressionAttributeNames: { "#pk": this.partitionKey },
                  ExpressionAttributeValues: values,
                }
              : {}),
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
            ...(this.scanPageSize ? { Limit: this.scanPageSize } : {}),
          }),
        ),
      );
      for (const item of page.Items ?? []) {
        const key = item[this.partitionKey]?.S;
        if (key !== undefined) out.push({ name: key, item });
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    // Names are ASCII, so code-unit order is DynamoDB's byte order too.
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * A failed condition, reported with the current record: it comes with the error from real
   * DynamoDB, or from one consistent read (emulators). Whose record it is, is not decided here.
   */
  private async resolveConflict(
    record: LeaseRecord,
    error: ConditionalCheckFailedException,
    options: CallOptions | undefined,
  ): Promise<never> {
    const retried = (error.$metadata?.attempts ?? 1) > 1;
    let current: Stored | null;
    if (error.Item) {
      current = this.decode(record.name, error.Item);
    } else {
      try {
        current = await this.read(record.name, options);
      } catch (readError) {
        if (isLeaseCorruptError(readError)) throw readError;
        if (retried) {
          throw new LeaseStoreError(
            `DynamoDB PutItem on table "${this.table}" for lease "${record.name}": the condition failed after an SDK retry and the current item could not be read, so an earlier attempt may have applied`,
            { ambiguous: true, cause: readError },
          );
        }
        // Only one attempt was sent and it was rejected: a certain conflict, current unknown.
        throw new LeaseConflictError(record.name, undefined, { cause: error });
      }
    }
    throw new LeaseConflictError(record.name, current, { cause: error });
  }

  protected async read(name: string, options: CallOptions | undefined): Promise<Stored | null> {
    const out = await this.call("GetItem", name, () =>
      this.client.send(
        new GetItemCommand({
          TableName: this.table,
          Key: { [this.partitionKey]: { S: name } },
          ConsistentRead: true,
        }),
        sendOptions(options),
      ),
    );
    return out.Item ? this.decode(name, out.Item) : null;
  }

  /** Runs one read request, wrapping SDK failures (reads change nothing, so never ambiguous). */
  private async call<T>(operation: string, lease: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw this.failure(operation, lease, error, false);
    }
  }

  private encode(record: LeaseRecord, revision: string): Item {
    const item: Item = {
      [this.partitionKey]: { S: record.name },
      [REV]: { N: revision },
      holder: record.holder === null ? { NULL: true } : { S: record.holder },
      term: { N: String(record.term) },
      leaseMs: { N: String(record.leaseMs) },
      acquiredAt: { N: String(record.acquiredAt) },
      renewedAt: { N: String(record.renewedAt) },
      metadata: { M: Object.fromEntries(Object.entries(record.metadata).map(([k, v]) => [k, { S: v }])) },
      writeId: { S: record.writeId },
    };
    for (const field of PROTOCOL_FIELDS) {
      const value = record[field];
      if (value !== undefined) item[field] = toAttribute(value);
    }
    if (this.ttlAttribute !== undefined) {
      const seconds = Math.ceil((record.renewedAt + record.leaseMs) / 1000) + this.ttlGraceSeconds;
      item[this.ttlAttribute] = { N: String(seconds) };
    }
    return item;
  }

  /** Item → Stored, or LeaseCorruptError naming every record attribute that is not what leasehold writes. */
  private decode(name: string, item: Item): Stored {
    const issues: FieldIssue[] = [];
    const fields: Record<string, unknown> = { name };
    for (const [attribute, value] of Object.entries(item)) {
      if (attribute === this.partitionKey || attribute === REV || attribute === this.ttlAttribute) continue;
      if (RECORD_ATTRIBUTES.includes(attribute)) fields[attribute] = toPlain(attribute, value, issues);
    }
    const rev = item[REV]?.N;
    const revision = rev !== undefined && /^[1-9][0-9]{0,15}$/.test(rev) ? rev : undefined;
    if (revision === undefined) issues.push({ path: REV, message: "expected a positive whole number attribute (N)" });
    if (issues.length > 0) throw new LeaseCorruptError(name, issues, { revision });
    return storedAt(revision!, () => parseRecord(name, fields));
  }

  private failure(operation: string, lease: string, error: unknown, write: boolean): LeaseStoreError {
    const name = errorName(error) ?? "Error";
    const meta = (error as { $metadata?: { httpStatusCode?: number; attempts?: number } } | null)?.$metadata;
    const status = meta?.httpStatusCode;
    const attempts = meta?.attempts ?? 1;
    const throttled = THROTTLING.has(name);
    const aborted = ABORTED.has(name);
    // No HTTP status means no response: a network error, a timeout or an abort.
    const transient = aborted || throttled || status === undefined || status >= 500;
    const ambiguous = write && (transient || attempts > 1);
    const kind = throttled
      ? "throttled"
      : aborted
        ? "aborted or timed out"
        : status === undefined
          ? "no response"
          : `HTTP ${status}`;
    const outcome = write ? (ambiguous ? "; the write may or may not have applied" : "; nothing was written") : "";
    const message = error instanceof Error ? error.message : String(error);
    return new LeaseStoreError(
      `DynamoDB ${operation} on table "${this.table}" for lease "${lease}" failed (${kind}, ${attempts} attempt${attempts === 1 ? "" : "s"}): ${name}: ${message}${outcome}`,
      { ambiguous, cause: error },
    );
  }
}

/** DynamoDB attribute value → plain JSON value for parseRecord; types leasehold never writes are issues. */
/** A protocol field's value (strings, numbers and maps of them) as a native attribute. */
function toAttribute(value: unknown): AttributeValue {
  if (typeof value === "string") return { S: value };
  if (typeof value === "number") return { N: String(value) };
  if (typeof value === "boolean") return { BOOL: value };
  return { M: Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, toAttribute(v)])) };
}

function toPlain(path: string, value: AttributeValue, issues: FieldIssue[]): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return Number(value.N);
  if (value.NULL !== undefined) return null;
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.M !== undefined) {
    return Object.fromEntries(Object.entries(value.M).map(([k, v]) => [k, toPlain(`${path}.${k}`, v, issues)]));
  }
  if (value.L !== undefined) return value.L.map((v, i) => toPlain(`${path}.${i}`, v, issues));
  issues.push({ path, message: `unsupported DynamoDB type ${Object.keys(value).join(",")}` });
  return undefined;
}

/** The most keys one BatchGetItem takes. */
const BATCH_GET_KEYS = 100;
/** Requests one batch of keys gets (the first and the retries of its unprocessed keys). */
const BATCH_GET_REQUESTS = 6;

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", stop, { once: true });
  });
}

function errorName(error: unknown): string | undefined {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === "string" ? name : undefined;
}

function sendOptions(options: CallOptions | undefined): { abortSignal?: AbortSignal } {
  return options?.signal ? { abortSignal: options.signal } : {};
}
