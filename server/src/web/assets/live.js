/* The monitors list's selection ("select all" and the count selected) and live updates of the
   list and of a monitor's page: server-sent events from /live name each monitor just checked,
   and its row or state section is fetched again as the server renders it. No HTML is built
   here; without this script every page is complete on reload and every form works. */
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
  if (!live().length || !window.EventSource || !window.fetch) return;

  const redraw = async (element) => {
    const id = element.dataset.monitor;
    let response;
    try {
      response = await fetch(element.dataset.live, { credentials: "same-origin" });
    } catch (_) {
      return;
    }
    // Signed out meanwhile: the answer is the sign-in page, not the fragment.
    if (!response.ok || response.redirected) return;
    const template = document.createElement("template");
    template.innerHTML = await response.text();
    const fresh = template.content.firstElementChild;
    if (!fresh || fresh.dataset.monitor !== id || !element.isConnected) return;
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
  });
  source.addEventListener("resync", () => live().forEach(redraw));
})();
