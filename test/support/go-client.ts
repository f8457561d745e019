/**
 * The Go side of test/go-client.test.ts: oapi-codegen, built once into
 * `.cache/oapi-codegen/<version>/` when missing (the fake-gcs-server pattern: go install into a
 * private folder and rename, quiet on success, the whole log on failure), and the build of
 * test/go-client/ around the client generated from a served document (in a temporary folder). Go keeps its module and
 * build caches, so only the first run on a machine downloads and compiles the dependencies.
 */
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

export const OAPI_CODEGEN_MODULE = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen";
export const OAPI_CODEGEN_VERSION = "v2.8.2";
// The generated client's runtime (github.com/oapi-codegen/runtime v1.9.0) declares go 1.26.
const MIN_GO = [1, 26] as const;

const run = promisify(execFile);
const projectRoot = resolve(import.meta.dirname, "../..");
export const goClientDir = join(projectRoot, "test/go-client");
const oapiCodegenBinary = join(projectRoot, ".cache/oapi-codegen", OAPI_CODEGEN_VERSION, "oapi-codegen");

type ExecError = { stdout?: string; stderr?: string; message: string };

async function step(what: string, file: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv }) {
  return run(file, args, { ...options, maxBuffer: 64 * 1024 * 1024 }).catch((error: ExecError) => {
    throw new Error(`${what} failed: ${file} ${args.join(" ")}\n${error.stderr || error.stdout || error.message}`);
  });
}

/** Builds the pinned oapi-codegen unless it is already cached; returns the binary's path. */
export async function installOapiCodegen(): Promise<string> {
  if (existsSync(oapiCodegenBinary)) return oapiCodegenBinary;
  await checkGo();
  const dir = join(oapiCodegenBinary, "..");
  mkdirSync(dir, { recursive: true });
  const staging = mkdtempSync(join(dir, ".install-"));
  try {
    await step("building oapi-codegen", "go", ["install", `${OAPI_CODEGEN_MODULE}@${OAPI_CODEGEN_VERSION}`], {
      env: { ...process.env, GOBIN: staging, CGO_ENABLED: "0" },
    });
    renameSync(join(staging, "oapi-codegen"), oapiCodegenBinary);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return oapiCodegenBinary;
}

/**
 * Generates the Go client from `document` (the served OpenAPI JSON) with test/go-client's
 * oapi-codegen.yaml, next to a copy of the program, and builds it. Returns the program's path and
 * the folder to remove afterwards. `-trimpath` keeps the build cache independent of the folder.
 */
export async function buildGoClient(document: string): Promise<{ binary: string; dir: string }> {
  await checkGo();
  const oapiCodegen = await installOapiCodegen();
  const dir = mkdtempSync(join(tmpdir(), "leasehold-go-client-"));
  for (const file of ["go.mod", "go.sum", "main.go", "oapi-codegen.yaml"]) {
    copyFileSync(join(goClientDir, file), join(dir, file));
  }
  writeFileSync(join(dir, "openapi.json"), document);
  mkdirSync(join(dir, "leaseholdapi"));
  await step(
    "generating the Go client",
    oapiCodegen,
    ["-config", "oapi-codegen.yaml", "-o", "leaseholdapi/client.gen.go", "openapi.json"],
    { cwd: dir },
  );
  const binary = join(dir, "go-client");
  await step("compiling the generated Go client", "go", ["build", "-trimpath", "-o", binary, "."], {
    cwd: dir,
    env: { ...process.env, CGO_ENABLED: "0" },
  });
  return { binary, dir };
}

async function checkGo(): Promise<void> {
  const advice = `install Go >= ${MIN_GO.join(".")} (https://go.dev/dl/): the Go client test builds oapi-codegen and the generated client with it`;
  let version: string;
  try {
    version = (await run("go", ["env", "GOVERSION"])).stdout.trim();
  } catch (cause) {
    throw new Error(`the "go" command was not found: ${advice}`, { cause });
  }
  const match = /^go(\d+)\.(\d+)/.exec(version);
  const [major, minor] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
  if (major < MIN_GO[0] || (major === MIN_GO[0] && minor < MIN_GO[1])) {
    throw new Error(`found ${version || "an unknown Go"}, too old: ${advice}`);
  }
}
