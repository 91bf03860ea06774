// Memory Studio entry point: sign-in, tabs (WAI-ARIA tabs pattern with arrow keys), wiring.
import { ApiError, api, setToken, token } from "./api.js";
import * as engine from "./engine.js";
import * as events from "./events.js";
import * as memories from "./memories.js";
import * as playground from "./playground.js";
import { $, show, showError } from "./dom.js";

const TABS = { memories, playground, engine, events };
const session = { admin: false, keyId: null };
let wired = false;

function selectTab(name, focus = false) {
  $("#toast").hidden = true;
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    const selected = tab.id === `tab-${name}`;
    tab.setAttribute("aria-selected", String(selected));
    tab.tabIndex = selected ? 0 : -1;
    show($(`#${tab.getAttribute("aria-controls")}`), selected);
    if (selected && focus) tab.focus();
  }
  location.hash = name;
  TABS[name].refresh();
}

function wireTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener("click", () => selectTab(tab.id.slice(4)));
    tab.addEventListener("keydown", (event) => {
      const i = tabs.indexOf(tab);
      let next = null;
      if (event.key === "ArrowRight") next = tabs[(i + 1) % tabs.length];
      else if (event.key === "ArrowLeft") next = tabs[(i - 1 + tabs.length) % tabs.length];
      else if (event.key === "Home") next = tabs[0];
      else if (event.key === "End") next = tabs[tabs.length - 1];
      if (next) {
        event.preventDefault();
        selectTab(next.id.slice(4), true);
      }
    });
  }
}

async function identify() {
  // the stats of an admin name no owner; a client key's name its own key id
  const stats = await api("/api/memory/stats");
  session.admin = stats.owner_id === null;
  session.keyId = stats.owner_id;
}

async function enter() {
  try {
    await identify();
  } catch (error) {
    setToken("");
    showSignIn(error instanceof ApiError && error.status === 401 ? new Error("This token was not accepted.") : error);
    return;
  }
  document.body.classList.toggle("admin", session.admin);
  $("#who-label").textContent = session.admin ? "Signed in as admin" : `Client key ${session.keyId}`;
  show($("#who"), true);
  show($("#signin"), false);
  show($("#app"), true);
  if (!wired) {
    wired = true;
    wireTabs();
    for (const tab of Object.values(TABS)) tab.setup(session);
  }
  const initial = location.hash.slice(1);
  selectTab(initial in TABS ? initial : "memories");
}

function showSignIn(error) {
  show($("#app"), false);
  show($("#who"), false);
  show($("#signin"), true);
  showError($("#signin-error"), error);
  $("#token").value = "";
  $("#token").focus();
}

document.addEventListener("DOMContentLoaded", () => {
  $("#signin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setToken($("#token").value.trim());
    enter();
  });
  $("#sign-out").addEventListener("click", () => {
    setToken("");
    location.hash = "";
    location.reload();
  });
  if (token()) enter();
  else showSignIn(null);
});
