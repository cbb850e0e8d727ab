//! JavaScript run in rendered pages. Each is an expression evaluated with `awaitPromise`.

/// Installed before any script of the page runs: counts what may still change the DOM soon
/// (timers of up to a second, fetch and XHR requests in flight) and when the DOM last changed,
/// parsing included. Timers and requests are counted, never delayed or altered.
pub const INSTRUMENT: &str = r#"(() => {
  if (window.__wachetBusy) return;
  const timers = new Set();
  let requests = 0;
  let lastMutation = performance.now();
  const setT = window.setTimeout, clearT = window.clearTimeout;
  window.setTimeout = function (fn, ms, ...args) {
    let id;
    const wrapped = typeof fn === 'function'
      ? function () { timers.delete(id); return fn.apply(this, args); }
      : fn;
    id = setT.call(window, wrapped, ms, ...args);
    if (typeof fn === 'function' && !(ms > 1000)) timers.add(id);
    return id;
  };
  window.clearTimeout = function (id) { timers.delete(id); return clearT.call(window, id); };
  if (window.fetch) {
    const fetch = window.fetch;
    window.fetch = function (...a) {
      requests++;
      return fetch.apply(this, a).finally(() => { requests--; });
    };
  }
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...a) {
    requests++;
    this.addEventListener('loadend', () => { requests--; }, { once: true });
    return send.apply(this, a);
  };
  new MutationObserver(() => { lastMutation = performance.now(); })
    .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  Object.defineProperty(window, '__wachetBusy', { value: () => timers.size + requests });
  Object.defineProperty(window, '__wachetLastMutation', { value: () => lastMutation });
})()"#;

/// Resolves when the DOM has had no mutation for `quiet` ms (1 s while a timer or request is
/// pending) and the document is parsed; or, once the page is loaded and has nothing pending (see
/// [`INSTRUMENT`]), after `idle_quiet` ms without mutation; or after `max` ms whatever happens. Quiet counts from the page's last
/// mutation, or with `fromNow` from the call (after an action such as a scroll). Yields the
/// milliseconds waited.
const SETTLE: &str = r#"((quiet, max, idleQuiet, fromNow) => new Promise(resolve => {
  const start = performance.now();
  let last = !fromNow && window.__wachetLastMutation ? window.__wachetLastMutation() : start;
  const observer = new MutationObserver(() => { last = performance.now(); });
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const busy = () => (window.__wachetBusy ? window.__wachetBusy() : 1);
  const step = Math.max(5, Math.min(50, idleQuiet / 4, quiet / 4));
  const tick = () => {
    const now = performance.now();
    const quietFor = now - last;
    const pending = busy();
    // While a timer or request is pending the DOM may still change: then only a quiet as long
    // as the longest timer counted (1 s) ends the wait early.
    const settled = (quietFor >= (pending === 0 ? quiet : Math.max(quiet, 1000))
        && document.readyState !== 'loading')
      || (quietFor >= idleQuiet && document.readyState === 'complete' && pending === 0);
    if (settled || now - start >= max) {
      observer.disconnect();
      resolve(Math.round(now - start));
    } else {
      setTimeout(tick, step);
    }
  };
  tick();
}))"#;

/// Waits for the DOM to settle.
pub fn settle(quiet_ms: u64, idle_quiet_ms: u64, max_ms: u64) -> String {
    format!("{SETTLE}({quiet_ms}, {max_ms}, {idle_quiet_ms}, false)")
}

/// Scrolls to the bottom, waits for the DOM to settle, and yields the document height before
/// and after, so the caller knows whether the page grew. The full quiet window applies: the
/// scroll event that loads more content arrives a frame later, after nothing looked pending.
pub fn scroll_once(quiet_ms: u64, max_ms: u64) -> String {
    format!(
        r#"(async () => {{
  const el = document.scrollingElement || document.documentElement;
  const before = el.scrollHeight;
  window.scrollTo(0, before);
  await {SETTLE}({quiet_ms}, {max_ms}, {quiet_ms}, true);
  return [before, el.scrollHeight];
}})()"#
    )
}

/// The serialized DOM with its doctype, or its length when it is larger than `limit` units.
pub fn serialize(limit: u64) -> String {
    format!(
        r#"(() => {{
  const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '';
  const html = doctype + (document.documentElement ? document.documentElement.outerHTML : '');
  return html.length > {limit} ? {{ tooLarge: html.length }} : {{ html }};
}})()"#
    )
}
