/**
 * What a user installs: `npm pack` (prepack builds dist/), then the tarball unpacked into a
 * scratch project beside exactly its production dependencies (`npm ls --omit=dev`), copied from
 * this checkout: the test never talks to the registry, and no dev dependency is there to lean on.
 * The installed `leasehold` runs its compiled CLI: --version, run and serve work, and the tarball
 * holds the library and nothing a tool happened to write into dist/.
 */
import { execFile, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { repo, until } from "./support/cli-processes.js";

const exec = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), "leasehold-tarball-"));
const project = join(scratch, "app");
const bin = join(project, "node_modules", ".bin", "leasehold");
let tarball = "";

beforeAll(async () => {
  const { stdout } = await exec("npm", ["pack", "--json", "--pack-destination", scratch], {
    cwd: repo,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [packed] = JSON.parse(stdout) as Array<{ filename: string }>;
  tarball = join(scratch, packed!.filename);
  mkdirSync(join(project, "node_modules", ".bin"), { recursive: true });
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }));
  // The production dependency closure, as npm would install it (same layout as this checkout's).
  const { stdout: tree } = await exec("npm", ["ls", "--omit=dev", "--parseable", "--all"], { cwd: repo });
  for (const dir of tree.split("\n").slice(1).filter(Boolean)) {
    cpSync(dir, join(project, relative(repo, dir)), { recursive: true, dereference: true });
  }
  await exec("tar", ["-xzf", tarball, "-C", scratch]);
  renameSync(join(scratch, "package"), join(project, "node_modules", "leasehold"));
  symlinkSync("../leasehold/bin/leasehold.js", bin);
}, 300_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

it("the tarball holds the built library, its CLI, license and changelog, and no tool output", async () => {
  const { stdout } = await exec("tar", ["-tzf", tarball], { maxBuffer: 64 * 1024 * 1024 });
  const files = stdout.split("\n").filter(Boolean);
  for (const f of [
    "package/dist/index.js",
    "package/dist/cli/main.js",
    "package/bin/leasehold.js",
    "package/LICENSE",
  ]) {
    expect(files).toContain(f);
  }
  expect(files).toContain("package/CHANGELOG.md");
  expect(files.filter((f) => f.startsWith("package/src/"))).toEqual([]);
  expect(files.filter((f) => /\.tsbuildinfo$|dist\/(lambda|worker)\//.test(f))).toEqual([]);
  expect(statSync(tarball).size).toBeLessThan(1024 * 1024);
});

it("installs without dev dependencies: no TypeScript loader, no sources", () => {
  const installed = join(project, "node_modules", "leasehold");
  expect(existsSync(join(installed, "dist", "cli", "main.js"))).toBe(true);
  expect(existsSync(join(installed, "src"))).toBe(false);
  for (const dev of ["tsx", "typescript", "vitest"]) expect(existsSync(join(project, "node_modules", dev))).toBe(false);
});

it("leasehold --version", async () => {
  const { version } = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string };
  const { stdout } = await exec(bin, ["--version"], { cwd: project });
  expect(stdout).toBe(`${version}\n`);
});

it("leasehold run elects and runs the command with its term", async () => {
  const { stdout } = await exec(
    bin,
    [
      "run",
      "--store",
      "memory:",
      "--lease",
      "jobs/tarball",
      "--lease-ms",
      "3000",
      "--",
      "node",
      "-e",
      "console.log('term ' + process.env.LEASEHOLD_TERM)",
    ],
    { cwd: project },
  );
  expect(stdout).toBe("term 1\n");
});

it("leasehold serve answers and stops on SIGTERM", async () => {
  const server = spawn(bin, ["serve", "--port", "0", "--store", "memory:", "--json"], {
    cwd: project,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  server.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => server.on("close", (code) => resolve(code)));
  try {
    const { url } = await until("the listening address", () => {
      const line = out.split("\n")[0];
      return line ? (JSON.parse(line) as { url: string }) : undefined;
    });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    server.kill("SIGTERM");
    expect(await exited).toBe(0);
  } finally {
    server.kill("SIGKILL");
  }
});
