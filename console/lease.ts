/**
 * One lease: who holds it, since when, a live countdown, and its timeline as far back as this
 * server has seen (its change log, GET /v1/leases/{name}/history), with what ended each term.
 * It follows the lease's own watch stream, resuming with Last-Event-ID after a reconnect, and
 * reloads the timeline after each change. The log is the server's memory: the page says so, and
 * says when the server has restarted since it was last read.
 */

import type { HistoryTermWire, LeaseHistoryWire } from "../src/api/console/wire.js";
import type { LeaseView, WatchEventView } from "../src/http/schemas.js";
import { type App, Refused, type View } from "./app.js";
import { ago, at, duration, h, metadataList, replace, serverNow, serverSaid } from "./dom.js";
import { expiry, prefixLink, stateBadge, stateOf } from "./leases.js";

function endOf(t: HistoryTermWire): Array<Node | string> {
  const end = t.end;
  if (!end) return ["running"];
  switch (end.kind) {
    case "released":
      return ["released at ", at(end.at)];
    case "taken-over":
      return [
        "taken over by ",
        h("strong", {}, end.by),
        " at ",
        at(end.at),
        " (no release; its lease ran out at ",
        at(t.renewedAt + t.leaseMs),
        ")",
      ];
    case "expired":
      return ["expired: its lease ran out at ", at(end.at), " without a renewal"];
    case "unseen":
      return [`ended unseen: the next term this server saw was ${end.next}`];
  }
}

const END_CLASS: Record<string, string> = {
  released: "released",
  "taken-over": "taken-over",
  expired: "expired",
  unseen: "unseen",
};

function timelineItem(t: HistoryTermWire): HTMLElement {
  const kind = t.end ? END_CLASS[t.end.kind] : "running";
  return h(
    "li",
    { class: `term ${kind}`, "data-term": t.term },
    h(
      "p",
      { class: "who" },
      h("strong", {}, `term ${t.term}`),
      " — ",
      t.holder === null ? h("em", {}, "holder not seen") : t.holder,
    ),
    h(
      "p",
      {},
      t.holder === null ? "first seen already released" : ["from ", at(t.acquiredAt)],
      " · last renewal seen ",
      at(t.renewedAt),
      ` · leaseMs ${t.leaseMs}`,
    ),
    h("p", { class: "end" }, h("span", { class: "label" }, t.end ? "ended: " : "now: "), endOf(t)),
    Object.keys(t.metadata).length > 0 ? h("div", {}, metadataList(t.metadata)) : null,
  );
}

export const leaseView: View = (app: App, main: HTMLElement, name: string) => {
  const slash = name.lastIndexOf("/");
  const parent = slash >= 0 ? name.slice(0, slash + 1) : "";
  const current = h("dl", { class: "current" });
  const notes = h("div", { class: "notes" });
  const timeline = h("ol", { class: "timeline", reversed: true });
  replace(
    main,
    h(
      "nav",
      { "aria-label": "Breadcrumb", class: "crumbs" },
      h("a", { href: prefixLink(parent) }, parent ? `Leases under “${parent}”` : "All leases"),
    ),
    h("h2", { tabindex: "-1" }, name),
    current,
    h("h3", { id: "timeline" }, "Timeline"),
    notes,
    timeline,
  );

  let lease: LeaseView | null | undefined;
  let free = false;
  let history: LeaseHistoryWire | undefined;
  let restartedAt: number | undefined;

  const row = (term: string, ...value: Array<Node | string>) => [h("dt", {}, term), h("dd", {}, ...value)];
  const drawCurrent = () => {
    if (lease === undefined) return replace(current, row("State", "loading…"));
    if (lease === null)
      return replace(current, row("State", "no such lease (yet): it appears here when it is first acquired"));
    const state = stateOf(lease, app.settings.maxSkewMs, free);
    replace(
      current,
      row("State", stateBadge(state)),
      row("Holder", lease.holder ?? "—"),
      row("Term", String(lease.term)),
      row(
        "Since",
        at(lease.acquiredAt),
        lease.holder ? ` (leading for ${duration(serverNow() - lease.acquiredAt)})` : "",
      ),
      row("Renewed", at(lease.renewedAt, ago(lease.renewedAt))),
      row("Expires", expiry(lease, state)),
      row("leaseMs", String(lease.leaseMs)),
      row("Metadata", metadataList(lease.metadata)),
    );
  };

  const drawNotes = () => {
    if (!history) return replace(notes, h("p", { class: "note" }, "Loading the timeline…"));
    const parts: Array<Node | null> = [];
    parts.push(
      history.limit === 0
        ? h(
            "p",
            { class: "note" },
            "This server keeps no history (LEASEHOLD_HISTORY_TERMS=0): only the current state is shown.",
          )
        : h(
            "p",
            { class: "note" },
            "The timeline is what this server has seen since it started at ",
            at(history.since),
            `, kept in its memory (up to ${history.limit} terms per lease). Nothing in it survives a restart of the server, and another server instance keeps its own.`,
          ),
    );
    if (restartedAt !== undefined) {
      parts.push(
        h(
          "p",
          { class: "warn", role: "status" },
          "The server restarted at ",
          at(restartedAt),
          ": what happened before that is no longer known to it.",
        ),
      );
    }
    if (history.firstSeenAt !== null)
      parts.push(h("p", { class: "note" }, "First seen by this server at ", at(history.firstSeenAt), "."));
    if (history.dropped > 0)
      parts.push(h("p", { class: "note" }, `${history.dropped} older terms were dropped to stay within the limit.`));
    replace(notes, parts);
  };

  const drawTimeline = () => {
    if (!history) return;
    if (history.terms.length === 0) {
      replace(timeline, h("li", { class: "term none" }, "No term seen yet."));
      return;
    }
    replace(timeline, history.terms.map(timelineItem));
  };

  let loading: Promise<void> | undefined;
  let again = false;
  const loadHistory = async (): Promise<void> => {
    if (loading) {
      again = true;
      return loading;
    }
    loading = (async () => {
      do {
        again = false;
        try {
          const fresh = await app.get<LeaseHistoryWire>(`v1/leases/${encodeURIComponent(name)}/history`);
          serverSaid(fresh.now);
          if (history && fresh.since !== history.since) restartedAt = fresh.since;
          history = fresh;
          drawNotes();
          drawTimeline();
        } catch (error) {
          if (error instanceof Refused && error.status !== 401)
            replace(notes, h("p", { class: "warn" }, `The timeline cannot be read: ${error.detail}`));
        }
      } while (again);
    })();
    await loading;
    loading = undefined;
  };

  drawCurrent();
  drawNotes();
  void loadHistory();
  app.follow(`v1/leases/${encodeURIComponent(name)}/watch`, true, (message) => {
    if (message.event !== "lease") return;
    const event = JSON.parse(message.data) as WatchEventView;
    lease = event.lease;
    free = event.free;
    drawCurrent();
    void loadHistory();
  });
  app.every(500, () => {
    drawCurrent();
  });
  // The clock moves the end of the newest term too (an expiry nobody wrote): read it again now and then.
  app.every(5000, () => void loadHistory());
};
