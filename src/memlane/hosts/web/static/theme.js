// memlane ui: the theme chosen with the toggle (kept in this browser), set
// before the page is drawn; without a choice the page follows the system.
"use strict";
try {
  const chosen = window.localStorage.getItem("memlane-theme");
  if (chosen === "dark" || chosen === "light") document.documentElement.dataset.theme = chosen;
} catch (error) {
  // Storage refused (a private window): the system's preference applies.
}
