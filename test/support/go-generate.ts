/**
 * `npm run go:generate`: regenerates the Go module's wire layer (clients/go/internal/wire/wire.gen.go)
 * from the document the API serves, after a change of the wire contract (src/http/schemas.ts,
 * src/api/openapi.ts). test/go/module.test.ts fails while the committed file differs.
 */
import { writeFileSync } from "node:fs";
import { generateWire, wireFile } from "./go-module.js";

writeFileSync(wireFile, await generateWire());
console.error(`go:generate: wrote ${wireFile}`);
