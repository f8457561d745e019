/**
 * A sharded group, live (GET /v1/groups/{group}/watch, the server's `groupStatus`): the bucket
 * grid coloured by owner with the owner's name in every cell, hand-offs in flight as "→ target",
 * unowned buckets marked in words and a pattern as well as red; each member's load against its
 * target; the config epoch and whether the group is balanced.
 */
import type { GroupStatusWire, GroupWatchEventWire } from "../src/api/console/wire.js";
import type { App, View } from "./app.js";
import { h, replace, serverSaid } from "./dom.js";
import { leaseLink, prefixLink } from "./leases.js";

/** Distinct owner colours (CSS classes o0..o7), each with text at 4.5:1 or better. */
const PALETTE = 8;

const BUCKET_WORDS: Record<string, string> = {
  free: "unowned",
  "owner-expired": "owner expired",
  "session-over": "owner left",
  "old-count": "old count",
};

function summary(status: GroupStatusWire): HTMLElement {
  const live = status.members.filter((m) => m.state === "live").length;
  const moving = status.buckets.filter((b) => b.state === "held" && b.target !== null && b.target !== b.owner).length;
  const verdict = status.balanced
    ? h("strong", { class: "ok" }, "✓ balanced")
    : h("strong", { class: "bad" }, "✗ not balanced");
  return h(
    "p",
    { class: "group-summary", id: "group-summary" },
    verdict,
    ` · ${status.config.buckets} buckets · config epoch ${status.config.epoch} · ${live} live member${live === 1 ? "" : "s"} · `,
    h("span", { class: status.unowned > 0 ? "bad" : "" }, `${status.unowned} unowned`),
    ` · ${moving} hand-off${moving === 1 ? "" : "s"} in flight`,
  );
}

export const groupView: View = (app: App, main: HTMLElement, group: string) => {
  const body = h("div", {}, h("p", { class: "note" }, "Loading…"));
  replace(
    main,
    h(
      "nav",
      { "aria-label": "Breadcrumb", class: "crumbs" },
      h("a", { href: prefixLink(`${group}/`) }, `Records of “${group}”`),
    ),
    h("h2", { tabindex: "-1" }, `Group ${group}`),
    body,
  );
  let problem: string | undefined;

  const draw = (event: GroupWatchEventWire) => {
    const status = event.status;
    if (!status) {
      replace(
        body,
        h(
          "p",
          { class: "note" },
          `No group “${group}” (no record ${group}/_config yet): it appears here once a member starts it.`,
        ),
      );
      return;
    }
    const colour = new Map(status.members.map((m, i) => [m.id, `o${i % PALETTE}`]));
    const members = h(
      "table",
      { class: "members" },
      h("caption", {}, "Members"),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Member", "State", "Session", "Load (held / target)", "Asks for"].map((c) => h("th", { scope: "col" }, c)),
        ),
      ),
      h(
        "tbody",
        {},
        status.members.map((m) =>
          h(
            "tr",
            { "data-member": m.id, "data-state": m.state },
            h(
              "th",
              { scope: "row" },
              h("span", { class: `swatch ${colour.get(m.id)}`, "aria-hidden": "true" }),
              h("a", { href: leaseLink(`${group}/_members/${m.id}`), "data-key": `member:${m.id}` }, m.id),
            ),
            h("td", {}, m.state, m.state === "fenced" && m.fencedBy ? ` by ${m.fencedBy}` : ""),
            h("td", {}, String(m.session)),
            h(
              "td",
              { class: "load" },
              h("meter", {
                min: 0,
                max: Math.max(1, m.target, m.held),
                value: m.held,
                "aria-label": `${m.id} holds ${m.held} of its target ${m.target}`,
              }),
              ` ${m.held} / ${m.target}`,
            ),
            h("td", {}, m.wants.length > 0 ? m.wants.join(", ") : "—"),
          ),
        ),
      ),
    );
    const grid = h(
      "ol",
      { class: "grid", "aria-label": `Buckets of ${group}`, start: 0 },
      status.buckets.map((b) => {
        const owned = b.state === "held" && b.owner !== null;
        const moving = owned && b.target !== null && b.target !== b.owner;
        const label = owned
          ? `bucket ${b.bucket}: ${b.owner}, term ${b.term}${moving ? `, moving to ${b.target}` : ""}`
          : `bucket ${b.bucket}: ${BUCKET_WORDS[b.state] ?? b.state}${b.owner ? ` (was ${b.owner})` : ""}, term ${b.term}`;
        return h(
          "li",
          {
            class: `bucket ${owned ? colour.get(b.owner ?? "") : "unowned"}${moving ? " moving" : ""}`,
            "data-bucket": b.bucket,
            "data-owner": owned ? (b.owner ?? "") : "",
          },
          h(
            "a",
            {
              href: leaseLink(`${group}/_buckets/${b.bucket}`),
              "aria-label": label,
              title: label,
              "data-key": `bucket:${b.bucket}`,
            },
            h("span", { class: "idx" }, String(b.bucket)),
            h("span", { class: "own" }, owned ? b.owner : (BUCKET_WORDS[b.state] ?? b.state)),
            moving ? h("span", { class: "mv" }, `→ ${b.target}`) : null,
          ),
        );
      }),
    );
    replace(
      body,
      summary(status),
      problem
        ? h("p", { class: "warn" }, `The server cannot read the store right now (${problem}): this may be out of date.`)
        : null,
      members,
      h("h3", {}, "Buckets"),
      h(
        "p",
        { class: "note" },
        "Each cell: the bucket, its owner (colour and name), and “→ member” while it moves there. Unowned buckets are red and say so.",
      ),
      grid,
    );
  };

  app.follow(`v1/groups/${encodeURIComponent(group)}/watch`, false, (message) => {
    if (message.event === "problem") {
      problem = (JSON.parse(message.data) as { detail: string }).detail;
      return;
    }
    if (message.event !== "group") return;
    problem = undefined;
    const event = JSON.parse(message.data) as GroupWatchEventWire;
    serverSaid(event.now);
    draw(event);
  });
};
