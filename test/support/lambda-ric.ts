/**
 * The AWS Lambda Node.js runtime interface client (npm `aws-lambda-ric`), the code that runs a
 * handler inside Lambda's Node.js runtimes: it loads the function, defines the `awslambda` global
 * (`streamifyResponse`, `HttpResponseStream`) and talks to the Runtime API. Installed once into
 * `.cache/aws-lambda-ric/<version>/` when missing, built in a private folder and renamed into
 * place, quiet on success and the whole log on failure. 3.3.0 is the last release for Node 20
 * (4.x needs Node 22); it builds a native addon (aws-lambda-cpp and curl, from sources inside the
 * package) with cmake, make, g++ and autoconf/automake/libtool, which .ci/run installs from
 * Debian. About 1.5 minutes on two busy cores.
 */
import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { installFolder } from "./cache-folder.js";

const run = promisify(execFile);
const projectRoot = resolve(import.meta.dirname, "../..");
export const LAMBDA_RIC_VERSION = "3.3.0";
const TOOLS = ["cmake", "make", "g++", "autoreconf", "libtoolize"];

/** Installs the runtime interface client unless cached; returns its command (bin/index.mjs). */
export async function installLambdaRic(): Promise<string> {
  const dir = join(projectRoot, ".cache", "aws-lambda-ric", LAMBDA_RIC_VERSION);
  const bin = join(dir, "node_modules", "aws-lambda-ric", "bin", "index.mjs");
  if (existsSync(bin)) return bin;
  const missing: string[] = [];
  for (const tool of TOOLS) await run("sh", ["-c", `command -v ${tool}`]).catch(() => missing.push(tool));
  if (missing.length > 0) {
    throw new Error(
      `building aws-lambda-ric ${LAMBDA_RIC_VERSION} needs ${missing.join(", ")}: apt-get install -y cmake make g++ autoconf automake libtool (.ci/run does)`,
    );
  }
  await installFolder(dir, async (staging) => {
    // npm runs a dependency's install scripts (here: the native build) only when allowed.
    writeFileSync(
      join(staging, "package.json"),
      `${JSON.stringify({ name: "lambda-ric-cache", private: true, allowScripts: { "aws-lambda-ric": true } })}\n`,
    );
    await run("npm", ["install", "--no-audit", "--no-fund", "--save-exact", `aws-lambda-ric@${LAMBDA_RIC_VERSION}`], {
      cwd: staging,
      maxBuffer: 64 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(
        `installing aws-lambda-ric ${LAMBDA_RIC_VERSION} failed:\n${error.stderr ?? ""}${error.stdout ?? ""}${error.message}`,
      );
    });
    if (!existsSync(join(staging, "node_modules", "aws-lambda-ric", "dist", "rapid-client.node"))) {
      throw new Error(
        `aws-lambda-ric ${LAMBDA_RIC_VERSION} installed without its native client (were its scripts run?)`,
      );
    }
  });
  return bin;
}
