// Playground tab: what recall would inject for a query, with ranks, block text and drops.
import { api } from "./api.js";
import { $, fmt, formValues, h, show, showError, statCard } from "./dom.js";

const REASONS = {
  floor: ["below floor", "warn"],
  screened: ["screened (echo, question, someone else or too few shared words)", "warn"],
  duplicate: ["duplicate", "grey"],
  cap: ["memory cap", "grey"],
  budget: ["over budget", "bad"],
};

function row(item) {
  return h(
    "tr",
    {},
    h("td", { class: "num", "data-label": "#" }, item.rank),
    h("td", { class: "content", "data-label": "Content" }, item.memory.content),
    h("td", { class: "num", "data-label": "Score" }, fmt(item.score, 4)),
    h("td", { "data-label": "Tier" }, h("span", { class: "badge" }, item.tier)),
    h("td", { class: "num", "data-label": "Keyword rank" }, fmt(item.keyword_rank)),
    h("td", { class: "num", "data-label": "Vector rank" }, fmt(item.vector_rank)),
    h("td", { class: "num", "data-label": "Tokens" }, item.tokens),
  );
}

function droppedRow(item) {
  const [label, kind] = REASONS[item.reason] || [item.reason, "grey"];
  return h(
    "tr",
    {},
    h("td", { "data-label": "Reason" }, h("span", { class: `badge ${kind}` }, label)),
    h("td", { class: "content", "data-label": "Content" }, item.memory.content),
    h("td", { class: "num", "data-label": "Keyword rank" }, fmt(item.keyword_rank)),
    h("td", { class: "num", "data-label": "Vector rank" }, fmt(item.vector_rank)),
    h("td", { class: "num", "data-label": "Tokens" }, item.tokens),
  );
}

function render(result) {
  $("#play-summary").replaceChildren(
    statCard("Injected", String(result.items.length), `strategy ${result.strategy}`),
    statCard("Tier", result.tier, result.degraded ? `degraded: ${result.degraded}` : "no degradation"),
    statCard("Tokens", `${result.tokens_used} / ${result.budget}`, "used of budget"),
    statCard("Vector tier", result.vector_tier, `embedding source: ${result.embedding_source}`),
  );
  const rows = $("#play-rows");
  rows.replaceChildren(
    ...(result.items.length
      ? result.items.map(row)
      : [h("tr", {}, h("td", { colspan: 7, class: "empty" }, "Nothing would be injected for this query."))]),
  );
  $("#play-block").textContent = result.block || "(no block: nothing is injected)";
  const dropped = result.dropped;
  show($("#play-dropped-card"), Array.isArray(dropped));
  if (Array.isArray(dropped)) {
    $("#play-dropped").replaceChildren(
      ...(dropped.length
        ? dropped.map(droppedRow)
        : [h("tr", {}, h("td", { colspan: 5, class: "empty" }, "No candidate was dropped."))]),
    );
  }
  show($("#play-result"), true);
}

async function preview(event, session) {
  event.preventDefault();
  const v = formValues(event.target);
  const body = { query: v.query, user_id: v.user_id || "", explain: v.explain };
  if (v.session_id) body.session_id = v.session_id;
  if (v.strategy) body.strategy = v.strategy;
  if (v.budget !== "") body.budget = Number(v.budget);
  if (session.admin) body.owner_id = v.owner_id;
  try {
    const result = await api("/api/memory/search-preview", { method: "POST", body });
    showError($("#play-error"), null);
    render(result);
  } catch (error) {
    show($("#play-result"), false);
    showError($("#play-error"), error);
  }
}

export function setup(session) {
  $("#play-form").addEventListener("submit", (event) => preview(event, session));
}

export function refresh() {
  // results stay until the next preview
}
