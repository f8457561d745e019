/**
 * The Go side of test/go-client.test.ts: oapi-codegen, built once into
 * `.cache/oapi-codegen/<version>/` when missing (./go-install.ts, as the Go test servers are), and
 * the build of test/go-client/ around the client generated from a served document (in a temporary
 * folder). Go keeps its module and build caches, so only the first run on a machine downloads and
 * compiles the dependencies.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { checkGo, type GoProgram, installGoProgram } from "./go-install.js";

const PURPOSE = "the Go client test builds oapi-codegen and the generated client with it";
export const oapiCodegen: GoProgram = {
  name: "oapi-codegen",
  installPath: "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen",
  version: "v2.8.2",
  purpose: PURPOSE,
};
// The generated client's runtime (github.com/oapi-codegen/runtime v1.9.0) declares go 1.26.
const MIN_GO_FOR_CLIENT = [1, 26] as const;

const run = promisify(execFile);
const projectRoot = resolve(import.meta.dirname, "../..");
export const goClientDir = join(projectRoot, "test/go-client");

type ExecError = { stdout?: string; stderr?: string; message: string };

export async function step(
  what: string,
  file: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv },
) {
  return run(file, args, { ...options, maxBuffer: 64 * 1024 * 1024 }).catch((error: ExecError) => {
    throw new Error(`${what} failed: ${file} ${args.join(" ")}\n${error.stderr || error.stdout || error.message}`);
  });
}

/**
 * Runs oapi-codegen on `document` (the served OpenAPI JSON) with `config` (an oapi-codegen.yaml)
 * in a temporary folder, and returns the generated Go source.
 */
export async function generateGo(document: string, config: string): Promise<string> {
  await checkGo(PURPOSE, MIN_GO_FOR_CLIENT);
  const generator = await installGoProgram(oapiCodegen);
  const dir = mkdtempSync(join(tmpdir(), "leasehold-oapi-codegen-"));
  try {
    copyFileSync(config, join(dir, "oapi-codegen.yaml"));
    writeFileSync(join(dir, "openapi.json"), document);
    await step(
      "generating the Go client",
      generator,
      ["-config", "oapi-codegen.yaml", "-o", "client.gen.go", "openapi.json"],
      { cwd: dir },
    );
    return readFileSync(join(dir, "client.gen.go"), "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Generates the Go client from `document` (the served OpenAPI JSON) with test/go-client's
 * oapi-codegen.yaml, next to a copy of the program, and builds it. Returns the program's path and
 * the folder to remove afterwards. `-trimpath` keeps the build cache independent of the folder.
 */
export async function buildGoClient(document: string): Promise<{ binary: string; dir: string }> {
  const generated = await generateGo(document, join(goClientDir, "oapi-codegen.yaml"));
  const dir = mkdtempSync(join(tmpdir(), "leasehold-go-client-"));
  for (const file of ["go.mod", "go.sum", "main.go"]) {
    copyFileSync(join(goClientDir, file), join(dir, file));
  }
  mkdirSync(join(dir, "leaseholdapi"));
  writeFileSync(join(dir, "leaseholdapi", "client.gen.go"), generated);
  const binary = join(dir, "go-client");
  await step("compiling the generated Go client", "go", ["build", "-trimpath", "-o", binary, "."], {
    cwd: dir,
    env: { ...process.env, CGO_ENABLED: "0" },
  });
  return { binary, dir };
}
