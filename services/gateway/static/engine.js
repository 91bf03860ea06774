// Engine tab: tiers and health, embedding source and signature, counts, reindex with progress,
// runtime settings form (admin) with the API's validation messages.
import { api } from "./api.js";
import { $, fmt, h, show, showError, statCard, toast } from "./dom.js";

let session = null;
let settingsView = null;

function status(ok, text) {
  const kind = ok === true ? "ok" : ok === false ? "bad" : "grey";
  return h("span", { class: `badge ${kind}` }, text);
}

function kv(pairs) {
  return h("dl", { class: "kv" }, ...pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "—")]));
}

function healthOk(value) {
  if (value === undefined || value === null) return null;
  return value === "ok" || value === "ready" || /:/.test(String(value));
}

export async function refresh() {
  try {
    const engine = await api("/api/engine");
    const health = engine.health || {};
    $("#engine-cards").replaceChildren(
      statCard("Keyword tier", engine.keyword.engine, `${fmt(engine.keyword.indexed)} indexed`),
      statCard("Vector tier", engine.vector.tier, engine.vector.status),
      statCard("Strategy", engine.retrieval_strategy, "retrieval"),
      statCard("Memories", fmt(engine.memories), session.admin ? "all owners" : "admin only"),
      statCard("Pending reindex", fmt(engine.pending_reindex), "waiting for vectors"),
    );
    $("#engine-details").replaceChildren(
      h("div", { class: "card" }, h("h2", {}, "Embedding"), kv([
        ["Source", engine.embedding.source],
        ["Configured", engine.embedding.configured_source],
        ["Model", engine.embedding.model],
        ["Dimension", fmt(engine.embedding.dim)],
        ["Signature", h("code", {}, engine.embedding.signature || "not built")],
      ])),
      h("div", { class: "card" }, h("h2", {}, "Health"), kv([
        ["Keyword (FTS5)", status(engine.keyword.status === "ok", engine.keyword.status)],
        ["Embedding", status(healthOk(health.embedding), /:/.test(health.embedding || "") ? "ok" : health.embedding || "unknown")],
        ["sqlite-vec", status(healthOk(health.sqlite_vec), health.sqlite_vec || engine.vector.status)],
        ["Quantization", engine.vector.quantization],
        ["Error", health.error || null],
      ])),
      h("div", { class: "card" }, h("h2", {}, "Qdrant"), kv([
        ["Configured", status(engine.qdrant.configured ? true : null, engine.qdrant.configured ? "yes" : "no")],
        ["Collection", engine.qdrant.collection],
        ["Healthy", engine.qdrant.healthy === null ? "—" : status(engine.qdrant.healthy, engine.qdrant.healthy ? "ok" : "unreachable")],
        ["Status", health.qdrant || "—"],
      ])),
    );
  } catch (error) {
    toast(error.message, "error");
  }
  if (session.admin) await loadSettings();
}

async function counts() {
  const stats = await api("/api/memory/stats");
  return { pending: stats.pending_reindex || 0, total: stats.total || 0 };
}

async function finished(jobId) {
  const page = await api("/api/events", { query: { kind: "reindex", limit: 20 } });
  return page.items.find((e) => e.detail && e.detail.job_id === jobId) || null;
}

/** Start a reindex and follow it: the bar is (work − pending) / work, where work is every
 *  memory (force) or the pending ones; the job's "reindex" event marks the end. */
async function reindex() {
  const button = $("#reindex");
  button.disabled = true;
  const label = $("#reindex-label");
  const bar = $("#reindex-bar");
  const force = $("#reindex-force").checked;
  show($("#reindex-progress"), true);
  bar.value = 0;
  try {
    const before = await counts();
    let work = force ? before.total : before.pending;
    const job = await api("/api/reindex", { method: "POST", body: { force } });
    label.textContent = `Queued job ${job.job_id.slice(0, 12)}…`;
    const deadline = Date.now() + 300000;
    let idle = 0;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 400));
      const [now, done] = await Promise.all([counts(), finished(job.job_id)]);
      if (done) {
        const embedded = done.detail.embedded ?? 0;
        bar.value = 100;
        label.textContent = `Reindex complete: ${embedded} embedded, ${done.detail.remaining ?? now.pending} pending`;
        break;
      }
      idle = now.pending === 0 ? idle + 1 : 0;
      if (!force && idle >= 3) {
        // nothing was pending: the job has nothing to do and records no event
        bar.value = 100;
        label.textContent = `Reindex complete: ${work} embedded, 0 pending`;
        break;
      }
      work = Math.max(work, now.pending);
      const fraction = work ? (work - now.pending) / work : 0;
      bar.value = Math.round(fraction * 100);
      label.textContent = `Embedding… ${work - now.pending} of ${work} done`;
      if (Date.now() > deadline) { label.textContent += " (continues in the background)"; break; }
    }
    await refresh();
  } catch (error) {
    label.textContent = `Reindex failed: ${error.message}`;
  } finally {
    button.disabled = false;
  }
}

const ENUMS = {
  injection_strategy: ["before_last_user", "leading_system", "system_prompt_prefix"],
  retrieval_strategy: ["hybrid", "exact", "semantic"],
  extraction: ["regex", "llm", "off"],
};

function fieldInput(name, value, secret) {
  if (ENUMS[name]) {
    return h("select", { name, "data-kind": "string" }, ...ENUMS[name].map((v) => h("option", { value: v, selected: v === value }, v)));
  }
  if (typeof value === "boolean") {
    const select = h("select", { name, "data-kind": "bool" }, h("option", { value: "true", selected: value }, "true"), h("option", { value: "false", selected: !value }, "false"));
    return select;
  }
  const input = h("input", { name, type: secret ? "password" : typeof value === "number" ? "number" : "text", step: typeof value === "number" ? "any" : null, "data-kind": typeof value });
  input.value = value === null || value === undefined ? "" : String(value);
  return input;
}

async function loadSettings() {
  try {
    settingsView = await api("/api/settings");
  } catch (error) {
    showError($("#settings-error"), error);
    return;
  }
  const immutable = new Set(settingsView.immutable);
  const secret = new Set(settingsView.secret);
  const fields = Object.entries(settingsView.settings).filter(([name]) => !immutable.has(name));
  $("#settings-fields").replaceChildren(
    ...fields.map(([name, value]) => h(
      "label",
      { class: "field", "data-field": name },
      name + (name in settingsView.overrides ? " •" : ""),
      fieldInput(name, value, secret.has(name)),
      h("span", { class: "err", hidden: true }),
    )),
  );
}

function parse(el) {
  if (el.dataset.kind === "bool") return el.value === "true";
  if (el.dataset.kind === "number") return el.value === "" ? null : Number(el.value);
  return el.value;
}

async function saveSettings(event) {
  event.preventDefault();
  const patch = {};
  for (const el of event.target.querySelectorAll("[data-field] input, [data-field] select")) {
    const before = settingsView.settings[el.name];
    const after = parse(el);
    if (after !== before && !(after === "" && before === null)) patch[el.name] = after === "" && el.dataset.kind !== "string" ? null : after;
  }
  for (const span of event.target.querySelectorAll(".err")) { span.hidden = true; span.textContent = ""; }
  if (!Object.keys(patch).length) { toast("Nothing changed", "info"); return; }
  try {
    await api("/api/settings", { method: "PUT", body: patch });
    showError($("#settings-error"), null);
    toast(`Saved ${Object.keys(patch).join(", ")}`);
    await loadSettings();
  } catch (error) {
    showError($("#settings-error"), error);
    const name = Object.keys(patch).find((n) => error.message.includes(n));
    const span = name && event.target.querySelector(`[data-field="${name}"] .err`);
    if (span) { span.textContent = error.message; span.hidden = false; }
  }
}

export function setup(s) {
  session = s;
  $("#reindex").addEventListener("click", reindex);
  $("#settings-form").addEventListener("submit", saveSettings);
}
