//! JavaScript run in rendered pages. Each is an expression evaluated with `awaitPromise`.

/// Resolves when the DOM has had no mutation for `quiet` ms (and the document is parsed), or
/// after `max` ms whatever happens; yields the milliseconds waited.
const SETTLE: &str = r#"((quiet, max) => new Promise(resolve => {
  const start = performance.now();
  let last = start;
  const observer = new MutationObserver(() => { last = performance.now(); });
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const step = Math.max(10, Math.min(50, quiet / 4));
  const tick = () => {
    const now = performance.now();
    if ((now - last >= quiet && document.readyState !== 'loading') || now - start >= max) {
      observer.disconnect();
      resolve(Math.round(now - start));
    } else {
      setTimeout(tick, step);
    }
  };
  setTimeout(tick, step);
}))"#;

/// Waits for the DOM to settle.
pub fn settle(quiet_ms: u64, max_ms: u64) -> String {
    format!("{SETTLE}({quiet_ms}, {max_ms})")
}

/// Scrolls to the bottom, waits for the DOM to settle, and yields the document height before
/// and after, so the caller knows whether the page grew.
pub fn scroll_once(quiet_ms: u64, max_ms: u64) -> String {
    format!(
        r#"(async () => {{
  const el = document.scrollingElement || document.documentElement;
  const before = el.scrollHeight;
  window.scrollTo(0, before);
  await {SETTLE}({quiet_ms}, {max_ms});
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
