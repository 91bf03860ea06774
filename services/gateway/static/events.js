// Events tab: the memory_events timeline (GET /api/events), newest first, with filters.
import { api } from "./api.js";
import { $, formValues, h, toast, when } from "./dom.js";

const PAGE = 30;
const KIND_STYLE = { reindex: "", injection: "", extraction: "ok", capture: "ok", eviction: "warn", forget: "warn", dead_letter: "bad", extraction_failed: "bad", settings_change: "grey", summary: "grey" };
const state = { filters: {}, offset: 0, session: null };

const SUMMARY = {
  injection: (n) => `${n} ${n === 1 ? "memory" : "memories"} injected`,
  capture: (n) => `${n} ${n === 1 ? "turn" : "turns"} captured`,
  extraction: (n) => `${n} ${n === 1 ? "fact" : "facts"} extracted`,
  eviction: () => "memory removed by the lifecycle sweep",
  forget: (n) => `${n} ${n === 1 ? "memory" : "memories"} forgotten`,
  summary: (n) => `${n} memories summarized`,
  dead_letter: () => "background job failed for good",
  settings_change: () => "runtime settings changed",
  reindex: () => "vector reindex finished",
};

function describe(event) {
  const d = event.detail || {};
  const parts = [];
  const summary = SUMMARY[event.kind];
  if (summary) parts.push(summary(event.count));
  else if (event.count !== 1) parts.push(`${event.count}×`);
  for (const key of ["reason", "job", "error", "extractor", "fields", "embedded", "type", "category"]) {
    if (d[key] !== undefined) parts.push(`${key}: ${Array.isArray(d[key]) ? d[key].join(", ") : d[key]}`);
  }
  if (event.memory_id) parts.push(`memory ${event.memory_id}`);
  return parts.join(" · ") || "—";
}

function item(event) {
  return h(
    "li",
    {},
    h("time", { datetime: new Date(event.created_at * 1000).toISOString() }, when(event.created_at)),
    h("span", {}, h("span", { class: `badge ${KIND_STYLE[event.kind] ?? "grey"}` }, event.kind)),
    h("span", { class: "detail" }, h("span", { class: "mono" }, event.owner_id, event.user_id ? ` / ${event.user_id}` : ""), h("br"), describe(event)),
  );
}

export async function refresh() {
  try {
    const page = await api("/api/events", { query: { ...state.filters, limit: PAGE, offset: state.offset } });
    const list = $("#event-list");
    list.replaceChildren(...(page.items.length ? page.items.map(item) : [h("li", { class: "empty" }, "No events yet.")]));
    const first = page.total ? state.offset + 1 : 0;
    $("#event-range").textContent = `${first}–${state.offset + page.items.length} of ${page.total.toLocaleString()}`;
    $("#event-prev").disabled = state.offset === 0;
    $("#event-next").disabled = state.offset + page.items.length >= page.total;
  } catch (error) {
    toast(error.message, "error");
  }
}

export function setup(session) {
  state.session = session;
  $("#event-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    const v = formValues(event.target);
    state.filters = {};
    for (const k of ["kind", "owner_id", "user_id"]) if (v[k]) state.filters[k] = v[k];
    if (!session.admin) delete state.filters.owner_id;
    state.offset = 0;
    refresh();
  });
  $("#event-prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE); refresh(); });
  $("#event-next").addEventListener("click", () => { state.offset += PAGE; refresh(); });
}
