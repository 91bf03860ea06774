// Memories tab: stat cards, filters, paginated list, add, inline edit, delete, bulk delete,
// JSONL export and import with progress.
import { api, exportLines, importFile } from "./api.js";
import { $, confirmDialog, fmt, formValues, h, show, showError, statCard, toast, when } from "./dom.js";

export const TYPES = ["factual", "episodic", "procedural", "semantic"];
export const CATEGORIES = ["preference", "decision", "pattern", "fact", "correction", "context", "turn", "summary"];
const PAGE = 25;
const FILTERS = ["q", "owner_id", "user_id", "session_id", "type", "category"];

const state = { filters: {}, offset: 0, total: 0, session: null };

function filtersFromForm() {
  const values = formValues($("#mem-filters"));
  const out = {};
  for (const name of FILTERS) if (values[name]) out[name] = values[name];
  if (!state.session.admin) delete out.owner_id;
  return out;
}

async function loadStats() {
  const owner = state.filters.owner_id;
  const stats = await api("/api/memory/stats", { query: { owner_id: owner } });
  const byType = stats.by_type || {};
  const events = stats.events || {};
  const types = TYPES.filter((t) => byType[t] && t !== "episodic").map((t) => `${byType[t]} ${t}`).join(" · ");
  const cards = $("#stat-cards");
  cards.replaceChildren(
    statCard("Memories", fmt(stats.total), owner ? `owner ${owner}` : state.session.admin ? "all owners" : "this key (global memories not counted)"),
    statCard("Long-term", fmt((stats.total || 0) - (byType.episodic || 0)), types || "none yet"),
    statCard("Tokens stored", fmt(stats.tokens_stored), "estimated"),
    statCard("Memories injected", fmt(events.injection || 0), "all time"),
    statCard("Learned", fmt((events.extraction || 0) + (events.capture || 0)), "facts and turns, all time"),
    statCard("Pending reindex", fmt(stats.pending_reindex || 0), "waiting for vectors"),
  );
}

function badge(text, kind = "") {
  return h("span", { class: `badge ${kind}` }, text);
}

function canChange(memory) {
  return state.session.admin || memory.owner_id !== "global";
}

function options(select, values, current) {
  select.replaceChildren(...values.map((v) => h("option", { value: v, selected: v === current }, v)));
  return select;
}

function editRow(tr, memory) {
  const area = h("textarea", { "aria-label": "Memory content", rows: 3 });
  area.value = memory.content;
  const type = options(h("select", { "aria-label": "Type" }), TYPES, memory.type);
  const category = options(h("select", { "aria-label": "Category" }), CATEGORIES, memory.category);
  const error = h("div", { class: "msg error", role: "alert", hidden: true });
  const save = h("button", { type: "button", class: "primary" }, "Save");
  const cancel = h("button", { type: "button" }, "Cancel");
  tr.replaceChildren(
    h("td", { class: "content", colspan: 4, "data-label": "Content" }, area, error),
    h("td", { "data-label": "Type" }, h("div", { class: "row" }, type, category)),
    h("td", { class: "actions" }, save, " ", cancel),
  );
  area.focus();
  cancel.addEventListener("click", () => tr.replaceWith(memoryRow(memory)));
  save.addEventListener("click", async () => {
    try {
      const updated = await api(`/api/memory/${encodeURIComponent(memory.id)}`, {
        method: "PATCH",
        body: { content: area.value, type: type.value, category: category.value },
      });
      tr.replaceWith(memoryRow(updated));
      toast("Memory updated");
    } catch (error) {
      showError(errorBox(tr), error);
    }
  });
}

function errorBox(tr) {
  return tr.querySelector(".msg.error");
}

async function deleteOne(memory) {
  const { ok } = await confirmDialog(`Delete this memory?\n“${memory.content.slice(0, 140)}”`);
  if (!ok) return;
  try {
    await api(`/api/memory/${encodeURIComponent(memory.id)}`, { method: "DELETE" });
    toast("Memory deleted");
    await refresh();
  } catch (error) {
    toast(error.message, "error");
  }
}

function memoryRow(memory) {
  const tr = h("tr", { "data-id": memory.id });
  const actions = h("td", { class: "actions" });
  if (canChange(memory)) {
    actions.append(
      h("button", { type: "button", class: "link", "aria-label": "Edit memory", onclick: () => editRow(tr, memory) }, "Edit"),
      h("button", { type: "button", class: "link danger", "aria-label": "Delete memory", onclick: () => deleteOne(memory) }, "Delete"),
    );
  } else {
    actions.append(badge("read-only", "grey"));
  }
  tr.append(
    h("td", { class: "content", "data-label": "Content" }, memory.content),
    h("td", { "data-label": "Type" }, badge(memory.type)),
    h("td", { "data-label": "Category" }, badge(memory.category, "grey")),
    h("td", { "data-label": "Owner / user", class: "mono" }, memory.owner_id, memory.user_id ? ` / ${memory.user_id}` : ""),
    h("td", { "data-label": "Updated", class: "nowrap" }, when(memory.updated_at)),
    actions,
  );
  return tr;
}

async function loadPage() {
  const page = await api("/api/memory", { query: { ...state.filters, limit: PAGE, offset: state.offset } });
  state.total = page.total;
  const rows = $("#mem-rows");
  if (!page.items.length) {
    rows.replaceChildren(h("tr", {}, h("td", { colspan: 6, class: "empty" }, "No memories match.")));
  } else {
    rows.replaceChildren(...page.items.map(memoryRow));
  }
  const first = page.total ? state.offset + 1 : 0;
  $("#mem-range").textContent = `${first}–${state.offset + page.items.length} of ${page.total.toLocaleString()}`;
  $("#mem-prev").disabled = state.offset === 0;
  $("#mem-next").disabled = state.offset + page.items.length >= page.total;
}

export async function refresh() {
  try {
    await Promise.all([loadPage(), loadStats()]);
  } catch (error) {
    toast(error.message, "error");
  }
}

function hasFilter(filters) {
  return ["user_id", "session_id", "type", "category", "q"].some((k) => filters[k]) || (state.session.admin && Boolean(filters.owner_id));
}

async function bulkDelete() {
  const filters = { ...state.filters };
  try {
    const dry = await api("/api/memory/bulk-delete", { method: "POST", body: { ...filters, dry_run: true } });
    const needAll = !hasFilter(filters);
    const text = needAll
      ? `No filter is set: this deletes all ${dry.matched} memories you can change.`
      : `Delete the ${dry.matched} memories matching the current filters?`;
    const { ok, all } = await confirmDialog(text, { okLabel: `Delete ${dry.matched}`, needAll });
    if (!ok) return;
    const result = await api("/api/memory/bulk-delete", { method: "POST", body: { ...filters, all: needAll && all } });
    toast(`Deleted ${result.deleted} memories`);
    state.offset = 0;
    await refresh();
  } catch (error) {
    toast(error.message, "error");
  }
}

function progress(label, fraction) {
  show($("#transfer"), true);
  $("#transfer-label").textContent = label;
  $("#transfer-bar").value = Math.round(Math.min(1, fraction) * 100);
}

async function doExport() {
  const filters = { ...state.filters };
  const expected = Math.max(1, state.total);
  try {
    progress("Exporting…", 0);
    const text = await exportLines(filters, (n) => progress(`Exporting… ${n} of ~${expected}`, n / expected));
    const count = text ? text.split("\n").filter(Boolean).length : 0;
    progress(`Exported ${count} memories`, 1);
    const url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
    const a = h("a", { href: url, download: "memories.jsonl", hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (error) {
    progress(`Export failed: ${error.message}`, 0);
  }
}

async function doImport(file) {
  try {
    progress(`Uploading ${file.name}…`, 0);
    const result = await importFile(file, (f) => progress(`Uploading ${file.name}… ${Math.round(f * 100)}%`, f));
    progress(`Imported ${result.written} memories (${result.skipped} skipped, ${result.lines} lines)`, 1);
    await refresh();
  } catch (error) {
    progress(`Import failed: ${error.message}`, 0);
  }
}

function fillSelects(root) {
  for (const select of root.querySelectorAll("select[data-options]")) {
    const values = select.dataset.options === "types" ? TYPES : CATEGORIES;
    const fallback = select.dataset.default;
    const opts = values.map((v) => h("option", { value: v, selected: v === fallback }, v));
    if (!fallback) opts.unshift(h("option", { value: "" }, "Any"));
    select.replaceChildren(...opts);
  }
}

async function addMemory(event) {
  event.preventDefault();
  const values = formValues(event.target);
  const body = { content: values.content, type: values.type, category: values.category, user_id: values.user_id || "" };
  if (values.session_id) body.session_id = values.session_id;
  if (state.session.admin) body.owner_id = values.owner_id || state.filters.owner_id || "";
  try {
    await api("/api/memory", { method: "POST", body });
    $("#add-dialog").close();
    toast("Memory added");
    await refresh();
  } catch (error) {
    showError($("#add-error"), error);
  }
}

export function setup(session) {
  state.session = session;
  fillSelects(document);
  $("#mem-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    state.filters = filtersFromForm();
    state.offset = 0;
    refresh();
  });
  $("#mem-filters").addEventListener("reset", () => {
    state.filters = {};
    state.offset = 0;
    setTimeout(refresh, 0);
  });
  $("#mem-prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE); loadPage(); });
  $("#mem-next").addEventListener("click", () => { state.offset += PAGE; loadPage(); });
  $("#bulk-delete").addEventListener("click", bulkDelete);
  $("#export").addEventListener("click", doExport);
  $("#import").addEventListener("click", () => $("#import-file").click());
  $("#import-file").addEventListener("change", (event) => {
    const [file] = event.target.files;
    if (file) doImport(file);
    event.target.value = "";
  });
  $("#add-memory").addEventListener("click", () => {
    $("#add-form").reset();
    showError($("#add-error"), null);
    $("#add-dialog").showModal();
  });
  $("#add-cancel").addEventListener("click", () => $("#add-dialog").close());
  $("#add-form").addEventListener("submit", addMemory);
}
