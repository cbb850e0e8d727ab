/* The difference page's keys: n or j goes to the next change, p or k to the previous one
   (focused and scrolled into view), said in a small legend this script adds, since the keys
   only exist with it. Keys typed into a field, or with a modifier, are left alone. Without
   this script every change is still an anchor with previous and next links. */
"use strict";
(() => {
  const changes = [...document.querySelectorAll(".change[id^='change-']")];
  const count = document.querySelector(".change-count");
  if (!changes.length || !count) return;

  const legend = document.createElement("p");
  legend.className = "keys";
  const key = (text) => {
    const k = document.createElement("kbd");
    k.textContent = text;
    return k;
  };
  legend.append(
    "Keys: ", key("n"), " or ", key("j"), " next change, ",
    key("p"), " or ", key("k"), " previous. ",
  );
  const where = document.createElement("span");
  where.setAttribute("aria-live", "polite");
  legend.append(where);
  count.after(legend);

  const current = () => {
    const at = changes.findIndex((c) => c === document.activeElement || c.id === location.hash.slice(1));
    return at;
  };
  const go = (at) => {
    const change = changes[at];
    if (!change) return;
    // The address names the change, as following its link would; no new history entry.
    history.replaceState(null, "", "#" + change.id);
    change.focus({ preventScroll: true });
    change.scrollIntoView({ block: "center" });
    where.textContent = "Change " + (at + 1) + " of " + changes.length + ".";
  };
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
    const at = current();
    if (event.key === "n" || event.key === "j") {
      go(Math.min(at + 1, changes.length - 1));
    } else if (event.key === "p" || event.key === "k") {
      go(Math.max(at - 1, 0));
    } else {
      return;
    }
    event.preventDefault();
  });
})();
