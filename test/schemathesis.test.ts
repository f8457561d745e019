/**
 * The document as a contract checked by a tool nobody here wrote: Schemathesis 4.32.5 runs every
 * check (`--checks all`) in every phase, stateful included, against what the server serves, once
 * with tokens and once without auth (loopback), and must report zero failures. Its settings, each
 * with its reason, are test/schemathesis/schemathesis.toml; the run is seeded, deterministic and
 * bounded (`--max-examples`): 70-90 s per server on two cores alone (21 operations), minutes when
 * every other test file runs beside it, once the venv is installed.
 */
import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApi, TOKENS } from "./support/api-server.js";
import { installSchemathesis, schemathesisDir } from "./support/schemathesis.js";

const execFileAsync = promisify(execFile);
const SEED = "20261203";
const MAX_EXAMPLES = "100";

let schemathesis: string[];
beforeAll(async () => {
  // First run on a machine: creates the virtualenv and installs the pinned packages.
  schemathesis = await installSchemathesis();
}, 600_000);

/** Runs the CLI without blocking this process's event loop: the server under test lives here. */
function runSchemathesis(args: string[]): Promise<{ code: number | null; output: string }> {
  const [python, ...prefix] = schemathesis;
  return new Promise((resolve, reject) => {
    const child = spawn(python!, [...prefix, ...args], {
      cwd: schemathesisDir,
      env: { ...process.env, NO_COLOR: "1", PYTHONDONTWRITEBYTECODE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output }));
  });
}

describe.each([
  { auth: "with tokens", tokens: undefined, header: [`Authorization: Bearer ${TOKENS.admin}`] },
  { auth: "without auth (loopback)", tokens: [], header: [] },
])("Schemathesis, every check and phase, $auth", ({ tokens, header }) => {
  let api: Awaited<ReturnType<typeof startApi>>;
  beforeAll(async () => {
    api = await startApi({ watchPollMs: 50, ...(tokens ? { tokens } : {}) });
  });
  afterAll(() => api.close());

  it("reports zero failures", async () => {
    const { code, output } = await runSchemathesis([
      "--config-file",
      join(schemathesisDir, "schemathesis.toml"),
      "run",
      `${api.url}/openapi.json`,
      "--checks",
      "all",
      "--phases",
      "examples,coverage,fuzzing,stateful",
      // Every path: by default Schemathesis leaves out the operation serving the document it loaded.
      "--include-path-regex",
      "^/",
      "--seed",
      SEED,
      "--max-examples",
      MAX_EXAMPLES,
      "--no-color",
      ...header.flatMap((h) => ["--header", h]),
    ]);
    expect(code, output).toBe(0);
    // All twenty-one operations were tested, in every phase, and nothing failed or errored.
    expect(output).toContain("Tested: 21");
    for (const phase of ["Examples", "Coverage", "Fuzzing", "Stateful"]) expect(output).toContain(`✅  ${phase} (in`);
    expect(output).toMatch(/(\d+) generated, \1 passed/);
  }, 600_000);
});

describe("the document's patterns", () => {
  let api: Awaited<ReturnType<typeof startApi>>;
  beforeAll(async () => {
    api = await startApi({ tokens: [] });
  });
  afterAll(() => api.close());

  it("mean to jsonschema-rs (the Rust validator Schemathesis uses) and Python's re what they mean to ECMA-262", async () => {
    const found = new Set<string>();
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (typeof value === "object" && value !== null) {
        for (const [key, v] of Object.entries(value)) {
          if (key === "pattern" && typeof v === "string") found.add(v);
          else collect(v);
        }
      }
    };
    collect(await (await fetch(`${api.url}/openapi.json`)).json());
    const patterns = [...found];
    expect(patterns.length).toBeGreaterThanOrEqual(4);
    // Names, holders, entity tags, and what tells engines apart: a trailing newline, C1 controls, astral characters.
    const probes = [
      "a",
      "adapters/billing",
      "billing-7f9c",
      "A",
      "\u00e9t\u00e9",
      "\u{1F600}",
      "\u00a0",
      "a\nb",
      "a\n",
    ];
    probes.push("\u0085", "\u009f", "\u007f", "\t", '"7"', '"a b"', 'W/"7"', "*", "", "x".repeat(193));
    const script = [
      "import json, re, sys, jsonschema_rs",
      "data = json.load(sys.stdin)",
      "for p in data['patterns']: re.compile(p)",
      "v = [jsonschema_rs.validator_for({'type': 'string', 'pattern': p}) for p in data['patterns']]",
      "print(json.dumps([[x.is_valid(s) for s in data['probes']] for x in v]))",
    ].join("\n");
    const [python] = schemathesis;
    const child = execFileAsync(python!, ["-c", script]);
    child.child.stdin?.end(JSON.stringify({ patterns, probes }));
    const rust = JSON.parse((await child).stdout) as boolean[][];
    const ecma = patterns.map((p) => probes.map((s) => new RegExp(p, "u").test(s)));
    expect(rust).toEqual(ecma);
  });
});
