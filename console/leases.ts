/**
 * The leases under a prefix, live: one row per lease (holder, term, renewed how long ago, a
 * countdown to expiry, leaseMs, metadata), free and expired ones marked in words and symbols as
 * well as colour, and the sharded groups found among them. A group's records are rows like any
 * other, in the state the server reports (a bucket is held while its owner's session lives, and
 * expires with it); they can be hidden to see only the plain leases.
 */
import type { LeaseSnapshotWire } from "../src/api/console/wire.js";
import type { LeaseView, UnreadableLeaseView, WatchEventView } from "../src/http/schemas.js";
import { pastExpiry } from "../src/tenure.js";
import type { App, View } from "./app.js";
import { ago, duration, h, metadataList, replace, serverNow, serverSaid } from "./dom.js";

export const leaseLink = (name: string) => `#/lease/${encodeURIComponent(name)}`;
export const groupLink = (group: string) => `#/group/${encodeURIComponent(group)}`;
export const prefixLink = (prefix: string) => (prefix ? `#/?prefix=${encodeURIComponent(prefix)}` : "#/");

export type LeaseState = "held" | "expired" | "free";

/**
 * The server's rule (docs/design.md §3): free once released, or once expiresAt + maxSkewMs has
 * passed (expiresAt is renewedAt + leaseMs, or a bucket's owner's session's), or when the server
 * said so (`free`: a bucket whose owner left or was fenced).
 */
export function stateOf(lease: LeaseView, maxSkewMs: number, free = false): LeaseState {
  if (lease.holder === null) return "free";
  return free || pastExpiry(lease.expiresAt, serverNow(), maxSkewMs) ? "expired" : "held";
}

const SYMBOL: Record<LeaseState, string> = { held: "●", expired: "▲", free: "○" };

export function stateBadge(state: LeaseState): HTMLElement {
  return h("span", { class: `state ${state}` }, h("span", { "aria-hidden": "true" }, SYMBOL[state]), ` ${state}`);
}

/** "in 12 s" while held, "ran out 3 s ago" once expired. */
export function expiry(lease: LeaseView, state: LeaseState): string {
  if (state === "free") return "—";
  const left = lease.expiresAt - serverNow();
  return left >= 0 ? `in ${duration(left)}` : `ran out ${duration(-left)} ago`;
}

interface Row {
  lease: LeaseView;
  /** What the server said of it: free (by its rule) when sent. */
  free: boolean;
  /** A sharded group's config record: never held, it is the group's count and epoch. */
  config: boolean;
  tr: HTMLTableRowElement;
  cells: Record<"state" | "holder" | "term" | "renewed" | "expires" | "leaseMs" | "meta", HTMLElement>;
}

/** A record the server cannot read or judge: its row says so and why, in words as well as colour. */
function unreadableRow(u: UnreadableLeaseView): HTMLTableRowElement {
  const dash = () => h("td", {}, "—");
  const why = u.errors.length > 0 ? u.errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)) : [u.detail];
  return h(
    "tr",
    { "data-name": u.name, "data-state": "unreadable" },
    h("th", { scope: "row" }, u.name),
    h(
      "td",
      {},
      h(
        "span",
        { class: "state unreadable" },
        h("span", { "aria-hidden": "true" }, "✕"),
        u.reason === "corrupt" ? " unreadable" : " cannot be judged",
      ),
    ),
    dash(),
    dash(),
    dash(),
    dash(),
    dash(),
    h("td", { class: "meta", title: u.detail }, why.join("; ")),
  );
}

export const leasesView: View = (app: App, main: HTMLElement, prefix: string) => {
  const rows = new Map<string, Row>();
  /** Rows of records the server cannot read or judge, by name: one bad record never hides the rest. */
  const broken = new Map<string, HTMLTableRowElement>();
  /** Puts `tr` in name order among every row shown. */
  const place = (name: string, tr: HTMLTableRowElement) => {
    const after = [...rows.keys(), ...broken.keys()].sort().find((n) => n > name);
    const before = after === undefined ? null : (rows.get(after)?.tr ?? broken.get(after) ?? null);
    tbody.insertBefore(tr, before);
  };
  const putUnreadable = (u: UnreadableLeaseView) => {
    rows.get(u.name)?.tr.remove();
    rows.delete(u.name);
    broken.get(u.name)?.remove();
    broken.delete(u.name);
    const tr = unreadableRow(u);
    place(u.name, tr);
    broken.set(u.name, tr);
  };
  let lastSnapshot: LeaseSnapshotWire | undefined;
  let maxSkewMs = app.settings.maxSkewMs;
  const tbody = h("tbody");
  const summary = h("p", { class: "note", id: "leases-summary" }, "Loading…");
  const groups = h("div");
  const hideGroups = h("input", { type: "checkbox", id: "hide-group-records", "data-key": "hide-group-records" });
  hideGroups.addEventListener("change", () => describe(lastSnapshot));
  /** Groups found in the listing (by their config record). */
  let found = new Set<string>();
  const groupOf = (name: string) =>
    [...found].find(
      (g) => name === `${g}/_config` || name.startsWith(`${g}/_members/`) || name.startsWith(`${g}/_buckets/`),
    );
  const input = h("input", { id: "prefix", name: "prefix", value: prefix, autocomplete: "off", spellcheck: "false" });
  const form = h(
    "form",
    { role: "search", class: "filter" },
    h("label", { for: "prefix" }, "Name prefix"),
    input,
    h("button", { type: "submit" }, "Show"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = prefixLink(input.value.trim());
  });
  replace(
    main,
    h("h2", { tabindex: "-1" }, prefix ? `Leases under “${prefix}”` : "Leases"),
    form,
    summary,
    groups,
    h(
      "table",
      { class: "leases", "aria-describedby": "leases-summary" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Lease", "State", "Holder", "Term", "Renewed", "Expires", "leaseMs", "Metadata"].map((c) =>
            h("th", { scope: "col" }, c),
          ),
        ),
      ),
      tbody,
    ),
  );

  const tick = (row: Row) => {
    if (row.config) {
      row.tr.dataset.state = "group";
      if (row.cells.state.dataset.state !== "group") {
        row.cells.state.dataset.state = "group";
        replace(
          row.cells.state,
          h("span", { class: "state group" }, h("span", { "aria-hidden": "true" }, "◆"), " group config"),
        );
      }
      row.cells.renewed.textContent = ago(row.lease.renewedAt);
      row.cells.expires.textContent = "—";
      return;
    }
    const state = stateOf(row.lease, maxSkewMs, row.free);
    row.tr.dataset.state = state;
    if (row.cells.state.dataset.state !== state) {
      row.cells.state.dataset.state = state;
      replace(row.cells.state, stateBadge(state));
    }
    row.cells.renewed.textContent = ago(row.lease.renewedAt);
    row.cells.expires.textContent = expiry(row.lease, state);
  };

  const fill = (row: Row, lease: LeaseView, free: boolean) => {
    row.lease = lease;
    row.free = free;
    row.cells.holder.textContent = lease.holder ?? "—";
    row.cells.term.textContent = String(lease.term);
    row.cells.leaseMs.textContent = String(lease.leaseMs);
    replace(row.cells.meta, metadataList(row.lease.metadata));
    tick(row);
  };

  const newRow = (lease: LeaseView, free: boolean): Row => {
    const td = () => h("td");
    const cells = {
      state: td(),
      holder: td(),
      term: td(),
      renewed: td(),
      expires: td(),
      leaseMs: td(),
      meta: td(),
    };
    const tr = h(
      "tr",
      { "data-name": lease.name },
      h("th", { scope: "row" }, h("a", { href: leaseLink(lease.name), "data-key": lease.name }, lease.name)),
      cells.state,
      cells.holder,
      cells.term,
      cells.renewed,
      cells.expires,
      cells.leaseMs,
      cells.meta,
    );
    const row: Row = { lease, free, tr, cells, config: false };
    fill(row, lease, free);
    return row;
  };

  const describe = (snapshot?: LeaseSnapshotWire) => {
    const leases = [...rows.values()].map((r) => r.lease);
    found = new Set(
      leases
        .filter((l) => l.name.endsWith("/_config") && l.metadata.buckets !== undefined && l.term === 0)
        .map((l) => l.name.slice(0, -"/_config".length)),
    );
    let grouped = 0;
    for (const row of rows.values()) {
      const group = groupOf(row.lease.name);
      if (group !== undefined) grouped++;
      const config = group !== undefined && row.lease.name === `${group}/_config`;
      if (config !== row.config) {
        row.config = config;
        row.cells.state.dataset.state = "";
        tick(row);
      }
      row.tr.hidden = group !== undefined && hideGroups.checked;
    }
    const plain = rows.size - grouped;
    const where = prefix ? ` under “${prefix}”` : "";
    let text = `${plain} lease${plain === 1 ? "" : "s"}${where}, updated live.`;
    if (broken.size > 0) {
      text += ` ${broken.size} record${broken.size === 1 ? "" : "s"} the server cannot read or judge ${broken.size === 1 ? "is" : "are"} marked ✕: an operator clears one with leasehold release --force.`;
    }
    if (grouped > 0) {
      text += hideGroups.checked
        ? ` ${grouped} records of sharded groups are hidden: a group's page shows them whole.`
        : ` ${grouped} records of sharded groups are listed too: a bucket is held while its owner's session lives.`;
    }
    if (snapshot?.truncated) text += ` Only the first ${snapshot.limit} records are shown: narrow the prefix.`;
    summary.textContent = text;
    replace(
      groups,
      found.size === 0
        ? null
        : h(
            "nav",
            { "aria-label": "Sharded groups", class: "groups" },
            h("h3", {}, "Sharded groups"),
            h(
              "ul",
              {},
              [...found].map((group) =>
                h(
                  "li",
                  {},
                  h("a", { href: groupLink(group), "data-key": `group:${group}` }, group),
                  ` (${rows.get(`${group}/_config`)?.lease.metadata.buckets} buckets)`,
                ),
              ),
            ),
            h("p", {}, hideGroups, h("label", { for: "hide-group-records" }, " Hide their records below")),
          ),
    );
  };

  // Renewals arrive many times a second on a busy prefix: the summary and the groups are redrawn at most every 250 ms.
  let scheduled = false;
  const soon = () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(() => {
      scheduled = false;
      describe(lastSnapshot);
    }, 250);
  };

  const put = ({ lease, free }: { lease: LeaseView; free: boolean }) => {
    broken.get(lease.name)?.remove();
    broken.delete(lease.name);
    const known = rows.get(lease.name);
    if (known) return fill(known, lease, free);
    const row = newRow(lease, free);
    row.tr.hidden = groupOf(lease.name) !== undefined && hideGroups.checked;
    place(lease.name, row.tr);
    rows.set(lease.name, row);
  };

  app.follow(`v1/watch?prefix=${encodeURIComponent(prefix)}`, false, (message) => {
    if (message.event === "snapshot") {
      const snapshot = JSON.parse(message.data) as LeaseSnapshotWire;
      lastSnapshot = snapshot;
      serverSaid(snapshot.now);
      maxSkewMs = snapshot.maxSkewMs;
      rows.clear();
      broken.clear();
      tbody.replaceChildren();
      for (const { lease, free } of snapshot.leases) if (lease) put({ lease, free });
      for (const u of snapshot.unreadable ?? []) putUnreadable(u);
      describe(snapshot);
    } else if (message.event === "lease") {
      const { lease, free } = JSON.parse(message.data) as WatchEventView;
      if (lease) put({ lease, free });
      soon();
    } else if (message.event === "unreadable") {
      putUnreadable(JSON.parse(message.data) as UnreadableLeaseView);
      soon();
    } else if (message.event === "removed") {
      const { name } = JSON.parse(message.data) as { name: string };
      rows.get(name)?.tr.remove();
      rows.delete(name);
      broken.get(name)?.remove();
      broken.delete(name);
      soon();
    } else if (message.event === "problem") {
      summary.textContent = `The server cannot read the store right now (${(JSON.parse(message.data) as { detail: string }).detail}); what is shown may be out of date.`;
    }
  });
  app.every(500, () => {
    for (const row of rows.values()) tick(row);
  });
};
