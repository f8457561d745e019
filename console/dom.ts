/**
 * DOM building for the console without a framework: elements are made with `h`, text is always
 * set as text (never parsed as HTML: holders and metadata are other people's strings), and times
 * are shown against the server's clock.
 */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<Child | Child[]>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el: Element, children: Array<Child | Child[]>): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "number" ? String(child) : child);
  }
}

/**
 * Replaces `el`'s children; the element that had the focus (by its `data-key`) gets it back, so a
 * keyboard user's place survives a live update.
 */
export function replace(el: Element, ...children: Array<Child | Child[]>): void {
  const focused = document.activeElement instanceof HTMLElement ? document.activeElement.dataset.key : undefined;
  el.replaceChildren();
  append(el, children);
  if (focused !== undefined) {
    const again = Array.from(el.querySelectorAll<HTMLElement>("[data-key]")).find((e) => e.dataset.key === focused);
    again?.focus();
  }
}

// ---- the server's clock ----

let offsetMs = 0;

/** Learns the server's clock from a wall-clock instant it just sent (network delay is ignored). */
export function serverSaid(now: number): void {
  offsetMs = now - Date.now();
}

/** The server's wall clock now, as well as this page knows it. */
export function serverNow(): number {
  return Date.now() + offsetMs;
}

// ---- words for times ----

export function duration(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.floor(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.floor(s % 60)} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** "12:03:04" today, else the date too; in the reader's locale, 24-hour. */
export function clockTime(ms: number): string {
  const d = new Date(ms);
  const today = new Date().toDateString() === d.toDateString();
  const time = d.toLocaleTimeString(undefined, { hour12: false });
  return today ? time : `${d.toLocaleDateString()} ${time}`;
}

/** A <time> element for a server instant, with the absolute time as its text or title. */
export function at(ms: number, text?: string): HTMLTimeElement {
  return h("time", { datetime: new Date(ms).toISOString(), title: clockTime(ms) }, text ?? clockTime(ms));
}

export function ago(ms: number): string {
  return `${duration(serverNow() - ms)} ago`;
}

/** A `key=value` list of metadata (reserved keys already left out). */
export function metadataList(metadata: Record<string, string>): HTMLElement | string {
  const entries = Object.entries(metadata);
  if (entries.length === 0) return "—";
  return h(
    "ul",
    { class: "meta" },
    entries.map(([k, v]) => h("li", {}, h("code", {}, k), "=", v)),
  );
}
