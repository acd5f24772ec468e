// memlane ui: the search ladder inline. Expand (L2) and transcript (L3)
// fetch a server-rendered, escaped fragment and put it under the hit.
"use strict";

async function loadInto(target, path, params) {
  const query = new URLSearchParams(params);
  target.textContent = "loading…";
  try {
    // Every URL of the viewer starts with its token prefix (the body says which).
    const response = await fetch(document.body.dataset.root + path + "?" + query.toString(), { credentials: "same-origin" });
    // The fragment is HTML the server built with every value escaped.
    target.innerHTML = await response.text();
  } catch (error) {
    target.textContent = "could not load: " + error;
  }
}

document.addEventListener("click", (event) => {
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
