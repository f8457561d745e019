/**
 * The one line every server entry logs when it starts (./policy.ts reads what it shows): where it
 * listens, which store (its URL with any credential redacted, ./redact.ts), the real auth mode
 * (token names and scopes, never a token) and the settings. Runtime-neutral.
 */
import { describeAuth } from "./auth-mode.js";
import type { ServerConfig } from "./policy.js";
import { redactUrl } from "./redact.js";

/** The one line every entry logs when it starts: where, which store, the real auth mode, the settings. */
export function startupLine(config: ServerConfig, where: string): string {
  const store = `${config.store.url}${config.store.from === "LEASEHOLD_STORE" ? "" : ` (${config.store.from})`}`;
  const { limits, ...timing } = config.app;
  const settings = [...Object.entries(timing), ...Object.entries(limits), ...Object.entries(config.admission ?? {})]
    .map(([k, value]) => `${k} ${value}`)
    .join(", ");
  return `API on ${where}; store ${redactUrl(store)}; auth: ${describeAuth(config.auth)}; ${settings}`;
}
