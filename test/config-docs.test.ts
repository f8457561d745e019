/**
 * The README's variable table ("Server configuration") against the code: every variable the
 * server reads has a row, "refused" appears exactly where src/api/config/policy.ts refuses it, the
 * bounds and defaults are the code's, and every LEASEHOLD_* name the docs or the code mention is
 * in the table (or is one `leasehold run` sets for its command).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { type Entry, NOT_READ_BY } from "../src/api/config/policy.js";
import {
  ADMISSION_VARIABLES,
  LIMIT_VARIABLES,
  LISTENER_BOUNDS,
  LISTENER_VARIABLES,
  SERVER_VARIABLES,
} from "../src/api/config/variables.js";
import { ADMISSION_BOUNDS, APP_OPTION_BOUNDS, LIMIT_NAMES } from "../src/api/options.js";

const root = join(import.meta.dirname, "..");
const readme = readFileSync(join(root, "README.md"), "utf8");

function table(): Map<string, Record<string, string>> {
  const section = readme.slice(readme.indexOf("## Server configuration"));
  const all = section.split("\n");
  const start = all.findIndex((l) => l.startsWith("| variable |"));
  const end = all.findIndex((l, i) => i > start && !l.startsWith("| "));
  const lines = all.slice(start, end);
  const header = lines[0]!
    .split("|")
    .slice(1, -1)
    .map((c) => c.trim());
  const rows = new Map<string, Record<string, string>>();
  for (const line of lines.slice(2)) {
    const cells = line.split(" | ").map((c) => c.replace(/^\| |\s*\|$/g, "").trim());
    const row = Object.fromEntries(header.map((h, i) => [h, cells[i] ?? ""]));
    for (const name of row.variable!.match(/`([A-Z_]+)`/g) ?? []) rows.set(name.slice(1, -1), row);
  }
  return rows;
}

const COLUMN: Record<Entry, string> = { node: "npm start", serve: "serve", lambda: "Lambda", worker: "Worker" };
/** Set by `leasehold run` and `leasehold cron` for their commands (docs/cli.md), not settings. */
const RUN_SETS = ["LEASEHOLD_LEASE", "LEASEHOLD_TERM", "LEASEHOLD_IDENTITY", "LEASEHOLD_JOB", "LEASEHOLD_FIRE"];

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    if (d.name === "node_modules" || d.name.startsWith(".")) return [];
    const path = join(dir, d.name);
    return d.isDirectory() ? files(path, ext) : ext.test(d.name) ? [path] : [];
  });
}

describe("README: Server configuration", () => {
  const rows = table();

  it("has a row for every variable the server reads, refused exactly where the code refuses it", () => {
    for (const name of SERVER_VARIABLES) {
      const row = rows.get(name);
      expect(row, `README row for ${name}`).toBeDefined();
      for (const [entry, column] of Object.entries(COLUMN) as [Entry, string][]) {
        const refused = NOT_READ_BY[name]?.[entry] !== undefined;
        expect(row![column]!.startsWith("refused"), `${name} on ${column}: "${row![column]}"`).toBe(refused);
      }
    }
  });

  it("states the code's defaults and bounds", () => {
    const bounds = {
      LEASEHOLD_MAX_SKEW_MS: APP_OPTION_BOUNDS.maxSkewMs,
      LEASEHOLD_WATCH_POLL_MS: APP_OPTION_BOUNDS.watchPollMs,
      LEASEHOLD_HEARTBEAT_MS: APP_OPTION_BOUNDS.heartbeatMs,
      ...Object.fromEntries(LIMIT_NAMES.map((n) => [LIMIT_VARIABLES[n], APP_OPTION_BOUNDS[n]])),
      ...Object.fromEntries(
        Object.entries(LISTENER_VARIABLES).map(([n, v]) => [v, LISTENER_BOUNDS[n as keyof typeof LISTENER_BOUNDS]]),
      ),
      ...Object.fromEntries(
        Object.entries(ADMISSION_VARIABLES).map(([n, v]) => [v, ADMISSION_BOUNDS[n as keyof typeof ADMISSION_BOUNDS]]),
      ),
    };
    for (const [name, b] of Object.entries(bounds)) {
      expect(rows.get(name)?.default, name).toBe(`\`${b.default}\``);
      // "whole ms", "whole bytes", ...: the unit's last word, then the bounds.
      const unit = b.unit.endsWith("milliseconds") ? "ms" : b.unit.split(" ").at(-1);
      expect(rows.get(name)?.["valid values"], name).toBe(`whole ${unit}, ${b.min}-${b.max}`);
    }
  });

  it("names every LEASEHOLD_* variable the docs and the code mention", () => {
    const sources = [
      join(root, "README.md"),
      ...files(join(root, "docs"), /\.md$/),
      ...files(join(root, "infra"), /\.(md|ts|tf)$/),
      ...files(join(root, "src"), /\.ts$/),
      join(root, "wrangler.toml"),
    ];
    const missing = new Set<string>();
    for (const file of sources) {
      for (const [name] of readFileSync(file, "utf8").matchAll(/\bLEASEHOLD_[A-Z_]*[A-Z]\b/g)) {
        if (!rows.has(name) && !RUN_SETS.includes(name)) missing.add(`${name} (${relative(root, file)})`);
      }
    }
    expect([...missing]).toEqual([]);
  });
});
