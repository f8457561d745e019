/**
 * The SQLite backend's declaration (../backend.ts): `sqlite:PATH` and `sqlite::memory:`, the SQLite
 * store's options, Node only: each Lambda instance would have its own file, and a Worker has no
 * file system. The store is src/backends/sqlite/store.ts. Runtime-neutral.
 */
import { z } from "zod";
import type { Backend, StoreModule } from "../backend.js";
import { millisecondsOption } from "../fields.js";
import * as parts from "../url.js";

export interface SqliteStoreOptions {
  /** File path, created with its folder when missing; ":memory:" for a private in-memory database. */
  path: string;
  /**
   * Create the file (and its folder) when missing. Default true; false for read-only uses
   * (`leasehold status`, `watch`, `release`), which must not leave an empty database behind.
   */
  create?: boolean;
  /** How long a writer waits for another process's lock before failing (ms). */
  busyTimeoutMs?: number;
  /** Table name (letters, digits, underscore). */
  table?: string;
  /**
   * How commits reach the disk: "FULL" (default) syncs the write-ahead log at every commit;
   * "EXTRA" also syncs the folder. Both keep every acknowledged write through a power loss.
   */
  synchronous?: "FULL" | "EXTRA";
  /**
   * While any lease is watched (a follower waiting, the API's watch streams), how often the store
   * checks whether anyone committed (ms): one `PRAGMA data_version`, no lease read unless it moved
   * (./watch.ts). Followers in every process sharing the file hear a release or a hand-over this
   * soon. Default 25.
   */
  watchPollMs?: number;
}

/**
 * Baselines for the benchmark and the power-loss test's control, not for use: "NORMAL" loses
 * acknowledged writes on power loss, and `inline` commits each write alone on the caller's thread.
 * Not exported by the package entry.
 * @internal
 */
export interface SqliteBaseline {
  synchronous?: "NORMAL" | "FULL" | "EXTRA";
  inline?: boolean;
}

export const sqliteOptionsSchema = z.strictObject(
  {
    path: z
      .string({ error: 'expected a file path or ":memory:"' })
      .min(1, { error: 'expected a file path or ":memory:"' }),
    busyTimeoutMs: z
      .number({ error: "expected milliseconds" })
      .int({ error: "expected whole milliseconds" })
      .nonnegative({ error: "expected a non-negative number" })
      .default(5000),
    table: z
      .string({ error: "expected a table name" })
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, {
        error: "expected 1-63 letters, digits or _, not starting with a digit",
      })
      .default("leases"),
    create: z.boolean({ error: "expected true or false" }).default(true),
    synchronous: z.enum(["FULL", "EXTRA"], { error: 'expected "FULL" or "EXTRA"' }).default("FULL"),
    watchPollMs: millisecondsOption(1, 60_000, "a minute").default(25),
  },
  { error: "expected an object with path" },
);

export interface SqliteUrl {
  kind: "sqlite";
  path: string;
}

const PER_INSTANCE = "each instance would have its own file, so two instances could elect two leaders";

export const sqliteBackend: Backend<SqliteUrl> = {
  kind: "sqlite",
  schemes: ["sqlite"],
  forms: ["sqlite:PATH (e.g. sqlite:./data/leasehold.db, sqlite:/abs/path.db)", "sqlite::memory:"],
  options: sqliteOptionsSchema,
  runtimes: {
    node: true,
    lambda: `${PER_INSTANCE.replace("instance", "Lambda instance")}; use LEASEHOLD_STORE=dynamodb://TABLE`,
    workers: "a Worker has no filesystem",
  },
  parse(text) {
    const path = text.slice("sqlite:".length);
    if (path === "") throw parts.invalid("sqlite path", `expected a file path after "sqlite:"`);
    // "sqlite://x" could mean a host, "x" relative or "/x": refuse to guess.
    if (path.startsWith("//")) {
      throw parts.invalid("sqlite path", `expected sqlite:/abs/path or sqlite:./relative/path, not "sqlite://..."`);
    }
    return { kind: "sqlite", path };
  },
  module: "./backends/sqlite/store.js",
  open(spec, { create, module }) {
    const { SqliteStore } = module as StoreModule<"SqliteStore", SqliteStoreOptions>;
    return new SqliteStore({ path: spec.path, ...(create ? {} : { create: false }) });
  },
};
