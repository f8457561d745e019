/**
 * The leases under a prefix, live: one row per lease (holder, term, renewed how long ago, a
 * countdown to expiry, leaseMs, metadata), free and expired ones marked in words and symbols as
 * well as colour, and the sharded groups found among them.
 */
import type { LeaseView, WatchEventView } from "../../../http/schemas.js";
import { visibleMetadata } from "../visible.js";
import type { LeaseSnapshotWire } from "../wire.js";
import type { App, View } from "./app.js";
import { ago, duration, h, metadataList, replace, serverNow, serverSaid } from "./dom.js";

export const leaseLink = (name: string) => `#/lease/${encodeURIComponent(name)}`;
export const groupLink = (group: string) => `#/group/${encodeURIComponent(group)}`;
export const prefixLink = (prefix: string) => (prefix ? `#/?prefix=${encodeURIComponent(prefix)}` : "#/");

export type LeaseState = "held" | "expired" | "free";

/** The server's rule (docs/design.md §3): free once released, or once renewedAt + leaseMs + maxSkewMs has passed. */
export function stateOf(lease: LeaseView, maxSkewMs: number): LeaseState {
  if (lease.holder === null) return "free";
  return serverNow() > lease.renewedAt + lease.leaseMs + maxSkewMs ? "expired" : "held";
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
  /** A bucket record of a sharded group: held while its owner's session lives, which its own stamps do not say. */
  bucket: boolean;
  tr: HTMLTableRowElement;
  cells: Record<"state" | "holder" | "term" | "renewed" | "expires" | "leaseMs" | "meta", HTMLElement>;
}

export const leasesView: View = (app: App, main: HTMLElement, prefix: string) => {
  const rows = new Map<string, Row>();
  let lastSnapshot: LeaseSnapshotWire | undefined;
  let maxSkewMs = app.settings.maxSkewMs;
  const tbody = h("tbody");
  const summary = h("p", { class: "note", id: "leases-summary" }, "Loading…");
  const groups = h("div");
  const showGroups = h("input", { type: "checkbox", id: "show-group-records", "data-key": "show-group-records" });
  showGroups.addEventListener("change", () => describe(lastSnapshot));
  /** Groups found in the listing (by their config record). */
  let found = new Set<string>();
  const groupOf = (name: string) =>
    [...found].find(
      (g) => name === `${g}/config` || name.startsWith(`${g}/members/`) || name.startsWith(`${g}/buckets/`),
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
    if (row.bucket) {
      if (row.cells.state.dataset.state !== "group") {
        row.cells.state.dataset.state = "group";
        replace(row.cells.state, h("span", { class: "state group" }, "see its group"));
      }
      row.cells.renewed.textContent = ago(row.lease.renewedAt);
      row.cells.expires.textContent = "with its owner's session";
      return;
    }
    const state = stateOf(row.lease, maxSkewMs);
    row.tr.dataset.state = state;
    if (row.cells.state.dataset.state !== state) {
      row.cells.state.dataset.state = state;
      replace(row.cells.state, stateBadge(state));
    }
    row.cells.renewed.textContent = ago(row.lease.renewedAt);
    row.cells.expires.textContent = expiry(row.lease, state);
  };

  const fill = (row: Row, lease: LeaseView) => {
    row.lease = { ...lease, metadata: visibleMetadata(lease.metadata) };
    row.cells.holder.textContent = lease.holder ?? "—";
    row.cells.term.textContent = String(lease.term);
    row.cells.leaseMs.textContent = String(lease.leaseMs);
    replace(row.cells.meta, metadataList(row.lease.metadata));
    tick(row);
  };

  const newRow = (lease: LeaseView): Row => {
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
    const row: Row = { lease, tr, cells, bucket: false };
    fill(row, lease);
    return row;
  };

  const describe = (snapshot?: LeaseSnapshotWire) => {
    const leases = [...rows.values()].map((r) => r.lease);
    found = new Set(
      leases
        .filter((l) => l.name.endsWith("/config") && l.metadata.buckets !== undefined && l.term === 0)
        .map((l) => l.name.slice(0, -"/config".length)),
    );
    let grouped = 0;
    for (const row of rows.values()) {
      const group = groupOf(row.lease.name);
      if (group !== undefined) grouped++;
      const bucket = group !== undefined && row.lease.name.startsWith(`${group}/buckets/`);
      if (bucket !== row.bucket) {
        row.bucket = bucket;
        row.cells.state.dataset.state = "";
        tick(row);
      }
      row.tr.hidden = group !== undefined && !showGroups.checked;
    }
    const plain = rows.size - grouped;
    const where = prefix ? ` under “${prefix}”` : "";
    let text = `${plain} lease${plain === 1 ? "" : "s"}${where}, updated live.`;
    if (grouped > 0) {
      text += ` ${grouped} records of sharded groups ${showGroups.checked ? "are listed too" : "are not listed"}: a group's page shows their state.`;
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
                  ` (${rows.get(`${group}/config`)?.lease.metadata.buckets} buckets)`,
                ),
              ),
            ),
            h("p", {}, showGroups, h("label", { for: "show-group-records" }, " List their records below too")),
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

  const put = (lease: LeaseView) => {
    const known = rows.get(lease.name);
    if (known) return fill(known, lease);
    const row = newRow(lease);
    row.tr.hidden = groupOf(lease.name) !== undefined && !showGroups.checked;
    rows.set(lease.name, row);
    const after = [...rows.keys()].sort().find((n) => n > lease.name);
    tbody.insertBefore(row.tr, after ? (rows.get(after)?.tr ?? null) : null);
  };

  app.follow(`v1/watch?prefix=${encodeURIComponent(prefix)}`, false, (message) => {
    if (message.event === "snapshot") {
      const snapshot = JSON.parse(message.data) as LeaseSnapshotWire;
      lastSnapshot = snapshot;
      serverSaid(snapshot.now);
      maxSkewMs = snapshot.maxSkewMs;
      rows.clear();
      tbody.replaceChildren();
      for (const { lease } of snapshot.leases) if (lease) put(lease);
      describe(snapshot);
    } else if (message.event === "lease") {
      const { lease } = JSON.parse(message.data) as WatchEventView;
      if (lease) put(lease);
      soon();
    } else if (message.event === "removed") {
      const { name } = JSON.parse(message.data) as { name: string };
      rows.get(name)?.tr.remove();
      rows.delete(name);
      soon();
    } else if (message.event === "problem") {
      summary.textContent = `The server cannot read the store right now (${(JSON.parse(message.data) as { detail: string }).detail}); what is shown may be out of date.`;
    }
  });
  app.every(500, () => {
    for (const row of rows.values()) tick(row);
  });
};
