// Small DOM helpers shared by the tabs (no framework).
export const $ = (selector, root = document) => root.querySelector(selector);

/** Create an element: h("td", {class: "num", "data-label": "Score"}, "0.5", child, ...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function show(el, visible) {
  el.hidden = !visible;
}

export function formValues(form) {
  const out = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    if (el.type === "checkbox") out[el.name] = el.checked;
    else out[el.name] = el.value.trim();
  }
  return out;
}

export function when(ts) {
  if (ts === null || ts === undefined) return "—";
  const d = new Date(ts * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fmt(n, digits = 3) {
  if (n === null || n === undefined) return "—";
  if (typeof n !== "number") return String(n);
  return Number.isInteger(n) ? n.toLocaleString() : n.toFixed(digits);
}

export function statCard(label, value, sub) {
  return h("div", { class: "stat" }, h("div", { class: "label" }, label), h("div", { class: "value" }, value), sub ? h("div", { class: "sub" }, sub) : null);
}

let toastTimer = null;
/** A short status message at the top of the page (aria-live). */
export function toast(text, kind = "ok") {
  const el = $("#toast");
  el.className = `msg ${kind}`;
  el.textContent = text;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, 4000);
}

export function showError(el, error) {
  el.textContent = error ? error.message || String(error) : "";
  el.hidden = !error;
}

/** Ask for confirmation in the modal dialog; resolves true/false. With `needAll`, the
 *  "all: true" box must be ticked and its value is returned as {ok, all}. */
export function confirmDialog(text, { okLabel = "Delete", needAll = false } = {}) {
  const dialog = $("#confirm");
  $("#confirm-text").textContent = text;
  $("#confirm-ok").textContent = okLabel;
  const allBox = $("#confirm-all");
  allBox.checked = false;
  show($("#confirm-all-wrap"), needAll);
  const ok = $("#confirm-ok");
  ok.disabled = needAll;
  const onAll = () => { ok.disabled = needAll && !allBox.checked; };
  allBox.addEventListener("change", onAll);
  return new Promise((resolve) => {
    const finish = (result) => {
      allBox.removeEventListener("change", onAll);
      ok.removeEventListener("click", onOk);
      $("#confirm-cancel").removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      dialog.close();
      resolve(result);
    };
    const onOk = () => finish({ ok: true, all: allBox.checked });
    const onCancel = (event) => { if (event) event.preventDefault(); finish({ ok: false, all: false }); };
    ok.addEventListener("click", onOk);
    $("#confirm-cancel").addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    $("#confirm-cancel").focus();
  });
}
