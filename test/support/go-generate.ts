/**
 * `npm run go:generate`: regenerates the Go module's wire layer (clients/go/internal/wire/wire.gen.go)
 * from the document the API serves, after a change of the wire contract (src/http/schemas.ts,
 * src/api/openapi.ts, src/http/problem-kinds.ts), and the module's problem kinds
 * (clients/go/kinds.gen.go). test/go/module.test.ts fails while a committed file differs.
 */
import { writeFileSync } from "node:fs";
import { generateKinds, generateWire, kindsFile, wireFile } from "./go-module.js";

writeFileSync(wireFile, await generateWire());
writeFileSync(kindsFile, generateKinds());
console.error(`go:generate: wrote ${wireFile} and ${kindsFile}`);
