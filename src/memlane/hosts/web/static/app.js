// memlane ui: progressive enhancement of server-rendered pages. Every page
// works without this script; with it:
// - expand (L2) and transcript (L3) fetch a server-rendered, escaped fragment
//   and put it under the hit;
// - the search box searches as you type (the same results the form gives);
// - "/" focuses the search box, Escape leaves it;
// - the first page listens to the server's events and fetches its live part
//   again when the store changes;
// - the theme toggle (hidden without this script) switches dark and light
//   and remembers the choice.
"use strict";

const ROOT = document.body.dataset.root;
const TYPING_DELAY_MS = 250;

async function fetchFragment(path, params) {
  // Every URL of the viewer starts with its token prefix (the body says which).
  const query = params ? "?" + new URLSearchParams(params).toString() : "";
  const response = await fetch(ROOT + path + query, { credentials: "same-origin" });
  // The fragment is HTML the server built with every value escaped.
  return response.text();
}

async function loadInto(target, path, params) {
  target.textContent = "loading…";
  try {
    target.innerHTML = await fetchFragment(path, params);
  } catch (error) {
    target.textContent = "could not load: " + error;
  }
}

document.addEventListener("click", (event) => {
  const toggle = event.target.closest("#theme-toggle");
  if (toggle) {
    switchTheme();
    return;
  }
  const button = event.target.closest("button.expand, button.transcript");
  if (!button) return;
  const box = button.closest(".hit, .section");
  const more = box && box.querySelector(":scope > .more");
  if (!more) return;
  if (button.classList.contains("expand")) {
    loadInto(more, "/fragment/expand", { hash: button.dataset.hash });
  } else {
    loadInto(more, "/fragment/transcript", { path: button.dataset.path, turn: button.dataset.turn });
  }
});

// -- search as you type -------------------------------------------------------

const searchBox = document.getElementById("q");
const results = document.getElementById("results");
let typingTimer = null;
let asked = 0;

async function searchNow(form) {
  const params = new URLSearchParams(new FormData(form));
  const mine = ++asked;
  if (!params.get("q").trim()) {
    if (form.classList.contains("quick")) results.innerHTML = "";
    return;
  }
  const html = await fetchFragment("/fragment/search", params);
  if (mine !== asked) return; // a newer search was asked meanwhile
  results.innerHTML = html;
  if (!form.classList.contains("quick")) {
    // On the search page the address follows, so a reload shows the same.
    history.replaceState(null, "", form.action + "?" + params.toString());
  }
}

if (searchBox && results && searchBox.form) {
  const form = searchBox.form;
  form.addEventListener("input", () => {
    clearTimeout(typingTimer);
    typingTimer = setTimeout(() => searchNow(form), TYPING_DELAY_MS);
  });
  form.addEventListener("change", () => {
    clearTimeout(typingTimer);
    searchNow(form);
  });
}

// -- keyboard -----------------------------------------------------------------

document.addEventListener("keydown", (event) => {
  const target = event.target;
  const typing = target.closest && target.closest("input, textarea, select, [contenteditable]");
  if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    if (searchBox) {
      searchBox.focus();
      searchBox.select();
    } else {
      window.location.href = ROOT + "/search";
    }
  } else if (event.key === "Escape" && target === searchBox) {
    searchBox.blur();
  }
});

// -- live: the first page follows the store -----------------------------------

const live = document.getElementById("live");
let refreshing = null;
let again = false;

async function refreshLive() {
  if (refreshing) {
    again = true; // one more fetch when this one is done
    return;
  }
  refreshing = fetch(live.dataset.live, { credentials: "same-origin" });
  try {
    const response = await refreshing;
    if (response.ok) live.innerHTML = await response.text();
  } finally {
    refreshing = null;
    if (again) {
      again = false;
      refreshLive();
    }
  }
}

if (live && window.EventSource) {
  const source = new EventSource(ROOT + "/events");
  source.addEventListener("changed", refreshLive);
  // "ready": the server watches the store for this page from now on. After
  // a dropped stream (the server restarted, say) the page may have missed a
  // change: it fetches its live part again.
  let connections = 0;
  source.addEventListener("ready", () => {
    document.body.classList.add("listening");
    if (++connections > 1) refreshLive();
  });
}

// -- theme --------------------------------------------------------------------

const themeToggle = document.getElementById("theme-toggle");
if (themeToggle) themeToggle.hidden = false;

function switchTheme() {
  const root = document.documentElement;
  const systemDark = window.matchMedia("(prefers-color-scheme: dark)").matches;
  const current = root.dataset.theme || (systemDark ? "dark" : "light");
  const next = current === "dark" ? "light" : "dark";
  root.dataset.theme = next;
  try {
    window.localStorage.setItem("memlane-theme", next);
  } catch (error) {
    // Not kept (storage refused): it holds for this page.
  }
}
