//! JavaScript run in rendered pages. Each is an expression evaluated with `awaitPromise`.

/// Installed before any script of the page runs: counts what may still change the DOM soon
/// (timers of up to a second, fetch and XHR requests in flight, response bodies being read,
/// and scripts, stylesheets and frames inserted after the load until they load) and when the
/// DOM last changed, parsing included. A timer of up to 10 s set at the moment a fetch or XHR
/// failed (a network error or a status of 400 or more; within 100 ms either way) is taken for
/// the page retrying it, and its due time is kept for [`SETTLE`]; after three retries a page
/// is taken to retry for ever and its timers are no longer counted. Nothing is delayed or
/// altered, only counted.
pub const INSTRUMENT: &str = r#"(() => {
  if (window.__wachetBusy) return;
  const timers = new Set();
  let requests = 0;
  let lastMutation = performance.now();
  // When pending work last ended: what it brought (data, a chunk) may reach the DOM only in a
  // later task or frame, so the quiet counts from then too.
  let lastEnd = 0;
  const setT = window.setTimeout, clearT = window.clearTimeout, clearI = window.clearInterval;
  const idle = window.requestIdleCallback;
  // Wakes a waiting settle as soon as the last pending timer or request is done.
  const waiters = [];
  const done = () => {
    lastEnd = performance.now();
    if (timers.size + requests === 0) for (const w of waiters.splice(0)) setT.call(window, w, 0);
  };
  // Counts one piece of work as pending; the returned function ends it, once.
  const begin = () => {
    requests++;
    let pending = true;
    return () => { if (pending) { pending = false; requests--; done(); } };
  };
  const track = promise => promise.finally(begin());
  // A failed request is often retried after a pause longer than the second counted above.
  // A timer of up to RETRY_MAX ms set within NEAR ms of a failure (the page's error handler
  // may run before the failure is seen here, as an XHR's onload runs before its loadend) is a
  // retry: `retries` keeps its due time until it runs or is cleared. After RETRIES of them
  // have run the page is retrying for ever, and its timers are no longer waited for.
  const RETRY_MAX = 10000, NEAR = 100, RETRIES = 3;
  let lastFailure = -Infinity, lastRetry = 0, retried = 0;
  const retries = new Map();
  // Longer timers set in the last NEAR ms, [id, set at, due], in case a failure follows.
  let recent = [];
  const failed = () => {
    if (retried >= RETRIES) return;
    const now = performance.now();
    lastFailure = now;
    for (const [id, at, due] of recent) if (now - at <= NEAR) retries.set(id, due);
  };
  const forget = id => { if (recent.length) recent = recent.filter(r => r[0] !== id); };
  window.setTimeout = function (fn, ms, ...args) {
    let id;
    const wrapped = typeof fn === 'function'
      ? function () {
          timers.delete(id);
          if (retries.delete(id)) { lastRetry = performance.now(); retried++; }
          forget(id);
          try { return fn.apply(this, args); } finally { done(); }
        }
      : fn;
    id = setT.call(window, wrapped, ms, ...args);
    if (typeof fn === 'function' && !(ms > 1000)) timers.add(id);
    else if (typeof fn === 'function' && ms <= RETRY_MAX) {
      const now = performance.now();
      if (now - lastFailure <= NEAR) retries.set(id, now + ms);
      else {
        recent = recent.filter(r => now - r[1] <= NEAR);
        if (recent.length < 64) recent.push([id, now, now + ms]);
      }
    }
    return id;
  };
  const cleared = id => { retries.delete(id); forget(id); if (timers.delete(id)) done(); };
  window.clearTimeout = function (id) { cleared(id); return clearT.call(window, id); };
  // Timer ids are shared: clearInterval cancels timeouts too.
  window.clearInterval = function (id) { cleared(id); return clearI.call(window, id); };
  if (window.fetch) {
    const fetch = window.fetch;
    window.fetch = function (...a) {
      const answer = fetch.apply(this, a);
      answer.then(r => { if (!r.ok) failed(); }, failed);
      return track(answer);
    };
  }
  // fetch() resolves with the headers; the body the page then reads is still on its way.
  if (window.Response) {
    for (const name of ['json', 'text', 'arrayBuffer', 'blob', 'formData']) {
      const read = Response.prototype[name];
      if (read) Response.prototype[name] = function (...a) { return track(read.apply(this, a)); };
    }
  }
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...a) {
    const end = begin();
    this.addEventListener('loadend', () => {
      if (this.status === 0 || this.status >= 400) failed();
      end();
    }, { once: true });
    // A send that throws (not opened, a synchronous request that failed) fires no loadend.
    try { return send.apply(this, a); } catch (e) { end(); throw e; }
  };
  // A script, stylesheet or frame a script inserts after the load (code split into chunks,
  // say) loads on its own; until it does the page is not done. One that never reports is
  // forgotten after a second.
  const loads = 'script[src],link[rel~=stylesheet i],iframe[src]';
  const awaitLoad = el => {
    const end = begin();
    el.addEventListener('load', end, { once: true });
    el.addEventListener('error', end, { once: true });
    setT.call(window, end, 1000);
  };
  new MutationObserver(records => {
    lastMutation = performance.now();
    if (document.readyState !== 'complete') return;
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (n.nodeType !== 1) continue;
        if (n.matches(loads)) awaitLoad(n);
        for (const inner of n.querySelectorAll(loads)) awaitLoad(inner);
      }
    }
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  Object.defineProperty(window, '__wachetBusy', { value: () => timers.size + requests });
  Object.defineProperty(window, '__wachetLastMutation', { value: () => lastMutation });
  Object.defineProperty(window, '__wachetLastEnd', { value: () => lastEnd });
  Object.defineProperty(window, '__wachetRetryDue', {
    value: () => { let due = 0; for (const d of retries.values()) due = Math.max(due, d); return due; },
  });
  Object.defineProperty(window, '__wachetLastRetry', { value: () => lastRetry });
  // The page may replace requestIdleCallback; settling uses the browser's own.
  if (idle) Object.defineProperty(window, '__wachetIdleCallback', { value: f => idle.call(window, f) });
  Object.defineProperty(window, '__wachetWhenIdle', { value: w => { waiters.push(w); } });
  Object.defineProperty(window, '__wachetSetTimeout', { value: (f, ms) => setT.call(window, f, ms) });
  Object.defineProperty(window, '__wachetClearTimeout', { value: id => clearT.call(window, id) });
})()"#;

/// Resolves once the document is parsed, at once if it is. Not its load event: a frame the
/// browser refuses to load (a `file:` URL) holds that back for ever; what is still loading then
/// is what settling waits for.
pub const PARSED: &str = r#"(document.readyState !== 'loading' ? true
  : new Promise(resolve => document.addEventListener('DOMContentLoaded', () => resolve(true), { once: true })))"#;

/// Resolves when the DOM has had no mutation for `quiet` ms (1 s while a timer or request is
/// pending) and the document is parsed; or, once the page is loaded and has nothing pending (see
/// [`INSTRUMENT`]), when the browser next finds the page's main thread idle (its own
/// `requestIdleCallback`: no task queued, the frame drawn) with nothing changed since, at most
/// `idle_quiet` ms after the last change; or after `max` ms whatever happens. Quiet counts from
/// the page's last change: a mutation, or the end of pending work (what it brought may reach the
/// DOM a task or a frame later); with `fromNow` not before the call (after an action such as a
/// scroll; then only the time rules apply). While the page waits to retry a failed request (see
/// [`INSTRUMENT`]) only `max` ends the wait; once the retry runs, quiet counts from then.
/// Yields the milliseconds waited.
///
/// Rather than polling it sleeps until the first moment one of these can hold (a mutation only
/// moves that later); the end of the last pending timer or request and the load event wake it
/// earlier, so a page settles when it is quiet, not up to a polling step later.
const SETTLE: &str = r#"((quiet, max, idleQuiet, fromNow) => new Promise(resolve => {
  const start = performance.now();
  let last = !fromNow && window.__wachetLastMutation ? window.__wachetLastMutation() : start;
  const observer = new MutationObserver(() => { last = performance.now(); });
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const busy = () => (window.__wachetBusy ? window.__wachetBusy() : 1);
  const since = () => Math.max(last, window.__wachetLastEnd ? window.__wachetLastEnd() : 0);
  const retryDue = () => (window.__wachetRetryDue ? window.__wachetRetryDue() : 0);
  const lastRetry = () => (window.__wachetLastRetry ? window.__wachetLastRetry() : 0);
  const later = window.__wachetSetTimeout || ((f, ms) => setTimeout(f, ms));
  const cancel = window.__wachetClearTimeout || (id => clearTimeout(id));
  const whenIdle = window.__wachetIdleCallback
    || (window.requestIdleCallback && (f => window.requestIdleCallback(f)));
  let timer = null, finished = false, idleCheck = false, registered = false;
  const finish = now => {
    finished = true;
    if (timer !== null) cancel(timer);
    observer.disconnect();
    resolve(Math.round(now - start));
  };
  const tick = () => {
    if (finished) return;
    const now = performance.now();
    const pending = busy();
    const loaded = document.readyState !== 'loading';
    const complete = document.readyState === 'complete';
    // While a timer or request is pending the DOM may still change: then only a quiet as long
    // as the longest timer counted (1 s) ends the wait early, counted from the last mutation
    // alone (a page polling with a timer chain ends work all the time).
    const changed = pending === 0 ? since() : Math.max(last, lastRetry());
    const full = changed + (pending === 0 ? quiet : Math.max(quiet, 1000));
    const due = retryDue();
    const retrying = due > now;
    const idle = complete && pending === 0 && !retrying ? changed + idleQuiet : Infinity;
    if (now - start >= max) return finish(now);
    if (!retrying && ((now >= full && loaded) || now >= idle)) return finish(now);
    // Loaded with nothing pending: done as soon as the browser finds the main thread idle
    // with nothing changed in between (a framework's render queued as a task or a frame runs
    // first). Not after an action: its events (a scroll's) come with the next frame, maybe
    // after that.
    if (complete && pending === 0 && !retrying && !fromNow && !idleCheck && whenIdle) {
      idleCheck = true;
      const mark = changed;
      whenIdle(() => {
        idleCheck = false;
        if (finished) return;
        const quietSince = since() === mark && busy() === 0;
        if (quietSince && retryDue() <= performance.now()) finish(performance.now()); else wake();
      });
    }
    // Until the page is complete its state changes without an event we listen to: look again
    // every 50 ms. A retry's timer runs at its due time: look again just after it.
    let next = Math.min(Math.max(loaded ? full : Infinity, retrying ? due + 1 : 0), idle, start + max);
    if (!complete) next = Math.min(next, now + 50);
    if (pending > 0 && !registered && window.__wachetWhenIdle) {
      registered = true;
      window.__wachetWhenIdle(() => { registered = false; wake(); });
    }
    timer = later(wake, Math.max(1, next - now));
  };
  const wake = () => { if (timer !== null) cancel(timer); timer = null; tick(); };
  if (document.readyState !== 'complete') {
    window.addEventListener('load', () => wake(), { once: true });
  }
  tick();
}))"#;

/// Waits for the DOM to settle.
pub fn settle(quiet_ms: u64, idle_quiet_ms: u64, max_ms: u64) -> String {
    format!("{SETTLE}({quiet_ms}, {max_ms}, {idle_quiet_ms}, false)")
}

/// The page's size: the document's height and its number of elements.
const SIZE: &str = "[(document.scrollingElement || document.documentElement).scrollHeight, \
  document.getElementsByTagName('*').length]";

/// Scrolls to the bottom, waits for the DOM to settle, and yields the page's size (see
/// [`SIZE`]) before and after, `[height, elements, height, elements]`, so the caller knows
/// whether the page grew. The full quiet window applies: the scroll event that loads more
/// content arrives a frame later, after nothing looked pending.
pub fn scroll_once(quiet_ms: u64, max_ms: u64) -> String {
    format!(
        r#"(async () => {{
  const before = {SIZE};
  window.scrollTo(0, before[0]);
  await {};
  return before.concat({SIZE});
}})()"#,
        settle_from_now(quiet_ms, max_ms)
    )
}

/// Waits for the DOM to settle, then serializes it (one round trip instead of two); `waited`
/// says how long the settling took.
pub fn settle_and_serialize(quiet_ms: u64, idle_quiet_ms: u64, max_ms: u64, limit: u64) -> String {
    serialize_after(&settle(quiet_ms, idle_quiet_ms, max_ms), limit)
}

/// Awaits `settle`, then serializes; `waited` is what the settling yielded.
fn serialize_after(settle: &str, limit: u64) -> String {
    format!(
        "(async () => {{ const w = await {settle}; const r = {}; r.waited = w; return r; }})()",
        serialize(limit)
    )
}

/// Settles with the whole quiet window counted from now (after an action, or after requests
/// the tab waited for: what they bring reaches the page in tasks of its own).
fn settle_from_now(quiet_ms: u64, max_ms: u64) -> String {
    format!("{SETTLE}({quiet_ms}, {max_ms}, {quiet_ms}, true)")
}

/// Settles again after the requests the tab waited for ended ([`super::pending`]), then
/// serializes.
pub fn settle_again_and_serialize(quiet_ms: u64, max_ms: u64, limit: u64) -> String {
    serialize_after(&settle_from_now(quiet_ms, max_ms), limit)
}

/// Settles again as [`settle_again_and_serialize`] does, and yields the page's size,
/// `[height, elements]` (see [`SIZE`]).
pub fn settle_again_size(quiet_ms: u64, max_ms: u64) -> String {
    format!(
        "(async () => {{ await {}; return {SIZE}; }})()",
        settle_from_now(quiet_ms, max_ms)
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
