/* The monitors list's selection ("select all" and the count selected) and live updates of the
   list, of a monitor's page and of a history: server-sent events from /live name each monitor
   just checked, and its row or state section is fetched again as the server renders it, or
   the history's new entries are fetched and put at its top. No HTML is built here; without
   this script every page is complete on reload and every form works. */
"use strict";
(() => {
  const bulk = document.getElementById("bulk");
  const all = document.getElementById("select-all");
  const count = document.getElementById("bulk-count");
  const boxes = () => bulk ? [...bulk.querySelectorAll('input[name="id"]')] : [];
  const counted = () => {
    if (!all || !count) return;
    const list = boxes();
    const n = list.filter((b) => b.checked).length;
    count.textContent = n + " selected";
    all.checked = n > 0 && n === list.length;
    all.indeterminate = n > 0 && n < list.length;
  };
  if (bulk && all && count) {
    all.closest("label").hidden = false;
    count.hidden = false;
    all.addEventListener("change", () => {
      for (const box of boxes()) box.checked = all.checked;
      counted();
    });
    bulk.addEventListener("change", (event) => {
      if (event.target.name === "id") counted();
    });
    counted();
  }

  const live = () => [...document.querySelectorAll("[data-live]")];
  const histories = () => [...document.querySelectorAll("[data-live-history]")];
  if ((!live().length && !histories().length) || !window.EventSource || !window.fetch) return;

  // The server's rendering of `url`, if it is the fragment of monitor `id` (signed out
  // meanwhile, the answer is the sign-in page instead).
  const fragment = async (url, id) => {
    let response;
    try {
      response = await fetch(url, { credentials: "same-origin" });
    } catch (_) {
      return null;
    }
    if (!response.ok || response.redirected) return null;
    const template = document.createElement("template");
    template.innerHTML = await response.text();
    const fresh = template.content.firstElementChild;
    return fresh && fresh.dataset.monitor === id ? fresh : null;
  };

  // New checks go on top of the history, newest first; one fetch at a time per list, so
  // two events close together do not bring the same entries twice.
  const pending = new WeakMap();
  const grow = (list) => {
    const run = (pending.get(list) || Promise.resolve()).then(async () => {
      const newest = list.querySelector("li.entry");
      const after = newest ? newest.id.replace(/^check-/, "") : "";
      const url = list.dataset.liveHistory + (after ? "?after=" + encodeURIComponent(after) : "");
      const fresh = await fragment(url, list.dataset.monitor);
      if (!fresh || !list.isConnected) return;
      const arrived = [...fresh.children].filter((li) => !document.getElementById(li.id));
      if (!arrived.length) return;
      for (const li of arrived) li.classList.add("arrived");
      list.prepend(...arrived);
      document.querySelector(".history-empty")?.remove();
    });
    pending.set(list, run.catch(() => {}));
  };

  const redraw = async (element) => {
    const fresh = await fragment(element.dataset.live, element.dataset.monitor);
    if (!fresh || !element.isConnected) return;
    // What the reader did to the row stays: the box ticked, the folder shown in a search.
    const box = element.querySelector('input[name="id"]');
    const freshBox = fresh.querySelector('input[name="id"]');
    if (box && freshBox) freshBox.checked = box.checked;
    const place = element.querySelector(".monitor-folder");
    const url = fresh.querySelector(".monitor-url");
    if (place && url && !fresh.querySelector(".monitor-folder")) url.after(place);
    const focused = element.contains(document.activeElement) ? document.activeElement.id : "";
    element.replaceWith(fresh);
    if (focused) document.getElementById(focused)?.focus();
    counted();
  };

  const source = new EventSource("/live");
  source.addEventListener("ready", () => document.documentElement.setAttribute("data-live-stream", "ready"));
  source.addEventListener("checked", (event) => {
    for (const element of live()) {
      if (element.dataset.monitor === event.data) redraw(element);
    }
    for (const list of histories()) {
      if (list.dataset.monitor === event.data) grow(list);
    }
  });
  source.addEventListener("resync", () => {
    live().forEach(redraw);
    histories().forEach(grow);
  });
})();

/* A feed's address copied with one click: the Copy button shows only where this runs; without
   it the address is selected text to copy by hand. */
(() => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    const field = document.getElementById(button.dataset.copy);
    if (!field) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      field.select();
      try {
        await navigator.clipboard.writeText(field.value);
      } catch {
        document.execCommand("copy");
      }
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = "Copy"; }, 2000);
    });
  }
})();
