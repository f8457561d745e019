/**
 * `npm run test:setup`: builds or installs every test server and external tool into `.cache/`
 * ahead of `npm test` (CI runs it first, so the test run's own clock measures tests, not
 * compilers). Each piece is the same installer the tests call on first use, so running this is
 * optional on a developer's machine: fake-gcs-server, versitygw, oapi-codegen and toxiproxy-server
 * with Go, the Go module's (clients/go, clients/go/k8slock) dependencies and build cache (client-go's compile takes
 * minutes on 2 cores), Schemathesis and mfusepy in virtualenvs, the AWS Lambda Node.js runtime
 * interface client (a native build), nginx (Debian's package, extracted), and PostgreSQL's test
 * cluster (initdb from Debian's postgresql-15, which .ci/run installs).
 */
import { rmSync } from "node:fs";
import { installFakeGcs } from "./servers/fake-gcs.server.js";
import { versitygwProgram } from "./servers/versitygw.server.js";
import { installGoProgram } from "./support/go-install.js";
import { buildGoPrograms, go, goModuleDir, k8slockDir } from "./support/go-module.js";
import { installLambdaRic } from "./support/lambda-ric.js";
import { installNginx } from "./support/nginx.js";
import { oapiCodegen } from "./support/oapi-codegen.js";
import { installPostgresTemplate } from "./support/postgres-server.js";
import { installPowerLossFs } from "./support/power-loss-fs.js";
import { installSchemathesis } from "./support/schemathesis.js";
import { toxiproxyProgram } from "./support/toxiproxy.js";

async function timed(what: string, step: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  await step();
  console.error(`test:setup: ${what} ready (${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

// One at a time: on two cores, parallel Go builds only trade each other's time (and memory).
await timed("fake-gcs-server", installFakeGcs);
await timed("versitygw", () => installGoProgram(versitygwProgram));
await timed("oapi-codegen", () => installGoProgram(oapiCodegen));
await timed("toxiproxy-server", () => installGoProgram(toxiproxyProgram));
await timed("the Go module's build", async () => {
  // The same flags as test/go/*.test.ts, so the tests find every package compiled.
  for (const dir of [goModuleDir, k8slockDir]) {
    await go(["vet", "./..."], dir);
    await go(["test", "-count=1", "-run", "^$", "./..."], dir);
  }
  const programs = await buildGoPrograms();
  rmSync(programs.dir, { recursive: true, force: true });
});
await timed("Schemathesis", installSchemathesis);
await timed("mfusepy (the power-loss file system)", installPowerLossFs);
await timed("aws-lambda-ric (the Lambda Node.js runtime)", installLambdaRic);
await timed("nginx (key-affinity routing)", installNginx);
await timed("PostgreSQL's test cluster (initdb, from Debian's postgresql-15)", installPostgresTemplate);
