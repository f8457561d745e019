/**
 * `npm run test:setup`: builds or installs every test server and external tool into `.cache/`
 * ahead of `npm test` (CI runs it first, so the test run's own clock measures tests, not
 * compilers). Each piece is the same installer the tests call on first use, so running this is
 * optional on a developer's machine: fake-gcs-server, versitygw and oapi-codegen with Go, the
 * generated Go client's module dependencies, Schemathesis and mfusepy in virtualenvs, and the AWS
 * Lambda Node.js runtime interface client (a native build), and nginx (Debian's package, extracted).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { installFakeGcs } from "./servers/fake-gcs.server.js";
import { versitygwProgram } from "./servers/versitygw.server.js";
import { goClientDir, oapiCodegen } from "./support/go-client.js";
import { installGoProgram } from "./support/go-install.js";
import { installLambdaRic } from "./support/lambda-ric.js";
import { installNginx } from "./support/nginx.js";
import { installPowerLossFs } from "./support/power-loss-fs.js";
import { installSchemathesis } from "./support/schemathesis.js";

const run = promisify(execFile);

async function timed(what: string, step: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  await step();
  console.error(`test:setup: ${what} ready (${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

// One at a time: on two cores, parallel Go builds only trade each other's time (and memory).
await timed("fake-gcs-server", installFakeGcs);
await timed("versitygw", () => installGoProgram(versitygwProgram));
await timed("oapi-codegen", () => installGoProgram(oapiCodegen));
await timed("the Go client's modules", () => run("go", ["mod", "download"], { cwd: goClientDir }));
await timed("Schemathesis", installSchemathesis);
await timed("mfusepy (the power-loss file system)", installPowerLossFs);
await timed("aws-lambda-ric (the Lambda Node.js runtime)", installLambdaRic);
await timed("nginx (key-affinity routing)", installNginx);
