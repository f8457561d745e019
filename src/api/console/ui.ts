/**
 * The console's three files, served by the API itself (no CDN, nothing fetched from elsewhere): a
 * page that is only a shell, and the script and style sheet that scripts/bundle-console.ts builds
 * from the console's own folder (console/), imported here as data (`#console-assets`). The page
 * carries no data and no token: the script asks for a token, keeps it in the tab's sessionStorage,
 * and reads everything through the API with it in the Authorization header. Runtime-neutral.
 *
 * The Content-Security-Policy allows nothing but this origin's own script, style and API (no inline
 * script or style, no other host, no frames, no form submission anywhere), so an injected string
 * can neither run nor send a token away.
 */
import type { Context } from "hono";
import { script, scriptTag, style, styleTag } from "#console-assets";

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SAFETY: Record<string, string> = {
  "Content-Security-Policy": CONSOLE_CSP,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
};

export interface PageSettings {
  heartbeatMs: number;
  maxSkewMs: number;
  historyTerms: number;
}

/** The page: numbers only go into it, so nothing needs escaping. */
export function page(s: PageSettings): string {
  return [
    "<!doctype html>",
    `<html lang="en" data-heartbeat-ms="${s.heartbeatMs}" data-max-skew-ms="${s.maxSkewMs}" data-history-terms="${s.historyTerms}">`,
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<title>leasehold console</title>",
    '<link rel="stylesheet" href="ui/console.css">',
    '<script type="module" src="ui/console.js"></script>',
    "</head>",
    '<body><div id="app"><noscript>The console needs JavaScript (its own script, served from here).</noscript></div></body>',
    "</html>",
    "",
  ].join("\n");
}

export function servePage(c: Context, html: string): Response {
  return c.body(html, 200, { ...SAFETY, "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
}

const assets = {
  script: { body: script, tag: scriptTag, type: "text/javascript; charset=utf-8" },
  style: { body: style, tag: styleTag, type: "text/css; charset=utf-8" },
};

/** The script or the style sheet; 304 when the browser's copy is current (If-None-Match). */
export function serveAsset(c: Context, which: keyof typeof assets): Response {
  const asset = assets[which];
  const headers = { ...SAFETY, ETag: asset.tag, "Cache-Control": "no-cache" };
  const match = c.req.header("if-none-match");
  if (match?.split(",").some((t) => t.trim() === asset.tag)) return c.body(null, 304, headers);
  return c.body(asset.body, 200, { ...headers, "Content-Type": asset.type });
}
