/**
 * The Go module (clients/go, with its sub-module clients/go/k8slock) for the tests: its wire layer
 * generated from the served document, its test programs built, and `go` run in it. Go keeps its
 * module and build caches (`npm run test:setup` fills them), so only the first run on a machine
 * downloads and compiles the dependencies (client-go's, about 4 minutes on 2 cores).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startApi } from "./api-server.js";
import { generateGo, step } from "./oapi-codegen.js";

const projectRoot = resolve(import.meta.dirname, "../..");
export const goModuleDir = join(projectRoot, "clients/go");
export const k8slockDir = join(goModuleDir, "k8slock");
export const wireFile = join(goModuleDir, "internal/wire/wire.gen.go");
const wireConfig = join(goModuleDir, "internal/wire/oapi-codegen.yaml");

/** The wire layer as oapi-codegen generates it from the document a server with tokens serves. */
export async function generateWire(): Promise<string> {
  const api = await startApi();
  try {
    const document = await (await fetch(`${api.url}/openapi.json`)).text();
    return await generateGo(document, wireConfig);
  } finally {
    await api.close();
  }
}

/** Runs `go args...` in `cwd`; the whole output on failure. */
export function go(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  return step(`go ${args[0]}`, "go", args, { cwd, env: { ...process.env, CGO_ENABLED: "0", ...env } });
}

export interface GoPrograms {
  dir: string;
  /** The Go elector candidate (clients/go/internal/testprocs/candidate). */
  candidate: string;
  /** The Go sharded member (clients/go/internal/testprocs/member). */
  member: string;
  /** client-go's elector on k8slock (clients/go/k8slock/internal/candidate). */
  k8sCandidate: string;
}

/** Builds the process tests' Go programs into a temporary folder (the caller removes it). */
export async function buildGoPrograms(): Promise<GoPrograms> {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-go-programs-"));
  await go(
    ["build", "-trimpath", "-o", `${dir}/`, "./internal/testprocs/candidate", "./internal/testprocs/member"],
    goModuleDir,
  );
  await go(["build", "-trimpath", "-o", join(dir, "k8s-candidate"), "./internal/candidate"], k8slockDir);
  return {
    dir,
    candidate: join(dir, "candidate"),
    member: join(dir, "member"),
    k8sCandidate: join(dir, "k8s-candidate"),
  };
}
