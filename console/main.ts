/**
 * The console's page: a header that always says whether the page is live, a token form when the
 * server asks for one, and the view the URL's fragment names (#/?prefix=, #/lease/NAME,
 * #/group/NAME). Read-only: nothing here writes to the server.
 */
import { type Settings, type Shell, storedToken, storeToken, type View, viewApp } from "./app.js";
import { at, duration, h, replace } from "./dom.js";
import { groupView } from "./group.js";
import { leaseView } from "./lease.js";
import { leasesView } from "./leases.js";
import type { Connection } from "./stream.js";

const data = document.documentElement.dataset;
const settings: Settings = {
  heartbeatMs: Number(data.heartbeatMs ?? 15000),
  maxSkewMs: Number(data.maxSkewMs ?? 1000),
  historyTerms: Number(data.historyTerms ?? 0),
};

const status = h("p", { id: "connection", role: "status", class: "connecting" }, "Connecting…");
const forget = h("button", { type: "button", id: "forget" }, "Forget token");
const banner = h("div", { id: "banner" });
const main = h("main", { id: "main" });
const app = document.getElementById("app") ?? document.body;
replace(
  app,
  h(
    "header",
    { class: "top" },
    h("p", { class: "brand" }, h("a", { href: "#/" }, "leasehold"), " console"),
    status,
    h("p", { class: "mode" }, "read-only"),
    forget,
  ),
  banner,
  main,
  h(
    "footer",
    {},
    "Read-only. The token stays in this browser tab (sessionStorage) and is sent only in the Authorization header. ",
    h("a", { href: "openapi.json" }, "API document"),
  ),
);

let connection: Connection | undefined;
/** When the view's stream was last lost (until it is live again), and when it came back. */
let lostSince: number | undefined;
let reconnectedAt: number | undefined;
const drawConnection = () => {
  const c = connection;
  main.classList.toggle("stale", c !== undefined && c.state !== "live");
  if (!c || c.state === "connecting") {
    status.className = "connecting";
    status.textContent = "Connecting…";
  } else if (c.state === "live") {
    status.className = "live";
    status.textContent = "● Live";
  } else if (c.state === "disconnected") {
    status.className = "down";
    status.textContent = "✕ Disconnected";
  } else {
    status.className = "down";
    status.textContent = `✕ Refused (${c.status})`;
  }
  if (c?.state === "disconnected" || (c?.state === "connecting" && lostSince !== undefined)) {
    const since = c.state === "disconnected" ? c.since : (lostSince ?? c.since);
    const retry = c.state === "disconnected" ? `retrying in ${duration(c.retryAt - Date.now())}` : "reconnecting now";
    const why = c.state === "disconnected" ? ` (${c.why})` : "";
    replace(
      banner,
      h(
        "p",
        { class: "warn", role: "alert" },
        h("strong", {}, "Disconnected from the server"),
        " since ",
        at(since),
        `${why}. What you see may be out of date; ${retry}.`,
      ),
    );
  } else if (c?.state === "refused") {
    replace(banner, h("p", { class: "warn", role: "alert" }, h("strong", {}, "The server refused: "), c.detail));
  } else if (c?.state === "live" && reconnectedAt !== undefined) {
    replace(banner, h("p", { class: "ok-note" }, "Reconnected at ", at(reconnectedAt), ": the view is current again."));
  } else replace(banner);
};
setInterval(() => {
  if (connection?.state === "disconnected") drawConnection();
}, 500);

let stopView = () => {};

const shell: Shell = {
  settings,
  root: new URL(".", location.href),
  showConnection(c) {
    if (c.state === "disconnected") lostSince ??= c.since;
    if (c.state === "live") {
      reconnectedAt = lostSince !== undefined ? c.since : undefined;
      lostSince = undefined;
    }
    connection = c;
    drawConnection();
  },
  askForToken(why) {
    stopView();
    storeToken(null);
    connection = undefined;
    drawConnection();
    tokenForm(why);
  },
};

function tokenForm(why: string): void {
  forget.hidden = true;
  const input = h("input", { id: "token", type: "password", autocomplete: "off", required: true, spellcheck: "false" });
  const form = h(
    "form",
    { class: "token" },
    h("label", { for: "token" }, "Bearer token (one that may read)"),
    input,
    h("button", { type: "submit" }, "Use this token"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    storeToken(input.value.trim());
    route();
  });
  replace(
    main,
    h("h2", { tabindex: "-1" }, "Token"),
    h("p", {}, why),
    form,
    h(
      "p",
      { class: "note" },
      "It is kept in this tab's sessionStorage only (closing the tab forgets it) and sent only in the Authorization header, never in a URL.",
    ),
  );
  input.focus();
}

forget.addEventListener("click", () => shell.askForToken("The token was forgotten. Enter one to continue."));

function parse(hash: string): { view: View; arg: string } | undefined {
  const path = hash.replace(/^#/, "") || "/";
  const [route, query = ""] = path.split("?", 2) as [string, string?];
  if (route === "/" || route === "") return { view: leasesView, arg: new URLSearchParams(query).get("prefix") ?? "" };
  const lease = /^\/lease\/(.+)$/.exec(route);
  if (lease?.[1]) return { view: leaseView, arg: decodeURIComponent(lease[1]) };
  const group = /^\/group\/(.+)$/.exec(route);
  if (group?.[1]) return { view: groupView, arg: decodeURIComponent(group[1]) };
  return undefined;
}

function route(): void {
  stopView();
  forget.hidden = storedToken() === null;
  connection = undefined;
  lostSince = undefined;
  reconnectedAt = undefined;
  drawConnection();
  const target = parse(location.hash);
  if (!target) {
    replace(main, h("h2", { tabindex: "-1" }, "Not found"), h("p", {}, h("a", { href: "#/" }, "All leases")));
  } else {
    const { app: viewContext, stop } = viewApp(shell);
    stopView = stop;
    target.view(viewContext, main, target.arg);
  }
  main.querySelector<HTMLElement>("h2")?.focus();
}

window.addEventListener("hashchange", route);
route();
