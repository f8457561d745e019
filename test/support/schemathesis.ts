/**
 * Schemathesis for test/schemathesis.test.ts, installed once into a virtualenv under
 * `.cache/schemathesis/` by ./python-venv.ts. The exact versions are
 * test/schemathesis/requirements.txt.
 */
import { join, resolve } from "node:path";
import { installPythonTool } from "./python-venv.js";

export const SCHEMATHESIS_VERSION = "4.32.5";

const projectRoot = resolve(import.meta.dirname, "../..");
export const schemathesisDir = join(projectRoot, "test/schemathesis");

/** Installs the pinned Schemathesis unless it is already cached; returns the command that runs it. */
export async function installSchemathesis(): Promise<string[]> {
  const python = await installPythonTool({
    name: "schemathesis",
    version: SCHEMATHESIS_VERSION,
    requirements: join(schemathesisDir, "requirements.txt"),
    neededBy: "the API conformance test runs",
  });
  return [python, "-m", "schemathesis.cli"];
}
