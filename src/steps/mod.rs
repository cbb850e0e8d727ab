//! Browser steps: what each action of a monitor's `steps` and `login` needs, its bounds, what
//! it is called in an error, and the JavaScript it runs in the page. This file is the one
//! table of the actions: every `match` on [`StepAction`] here is exhaustive, so a new action
//! is refused by the compiler until it is validated, described and given its script.
//!
//! Steps run in the rendered page after it loads (`render`, feature `chrome`); a login runs
//! only when needed and its session is kept between checks by a [`SessionStore`] the
//! frontend provides ([`session`]). A failure names the step ("step 3 of 5 (click `#go`): no
//! element matched within 10 s") with the page's URL and title, and never a secret value
//! ([`Steps::scrub`]).

pub mod session;

pub use session::{MemorySessions, SavedSession, SessionError, SessionStore};

use crate::model::{Monitor, Step, StepAction};
use std::time::Duration;

/// Most steps in `steps`, and in `login.steps`.
pub const MAX_STEPS: usize = 50;
/// Longest `wait`.
pub const MAX_WAIT: Duration = Duration::from_secs(10);
/// Longest `waitFor` (its `value`, in seconds).
pub const MAX_WAIT_FOR: Duration = Duration::from_secs(30);
/// How long a step waits for its element unless it says otherwise.
pub const ELEMENT_WAIT: Duration = Duration::from_secs(10);
/// How long an `optional` step waits for its element at most before it is skipped: the page
/// has settled already, so a banner that is coming is there by then.
pub const OPTIONAL_WAIT: Duration = Duration::from_secs(2);
/// How long an `optional` step goes on waiting for its element once the page has loaded, has
/// nothing pending (no short timer, request or inserted script the renderer counts) and its
/// document stopped changing: it is skipped then, before [`OPTIONAL_WAIT`]. A banner a script
/// adds late comes with pending work or changes to the document, each of which starts this
/// wait again.
pub const OPTIONAL_QUIET: Duration = Duration::from_millis(300);
/// How long the page is given to show `loggedInWhen` once it has settled.
pub const SIGNED_IN_WAIT: Duration = Duration::from_secs(3);
/// Longest `script` run.
pub const SCRIPT_TIME: Duration = Duration::from_secs(5);
/// Longest all the steps of a check (its login included) may take together.
pub const STEPS_BUDGET: Duration = Duration::from_secs(120);
/// Most characters a `type` or `script` value holds.
pub const MAX_VALUE_CHARS: usize = 10_000;
/// Most bytes of a selector.
pub const MAX_SELECTOR_BYTES: usize = 1_000;

/// Keys a `press` step knows by name, with their DOM code and Windows key code; any single
/// character is pressed as itself too.
pub const KEYS: &[(&str, i64)] = &[
    ("Enter", 13),
    ("Tab", 9),
    ("Escape", 27),
    ("Backspace", 8),
    ("Delete", 46),
    ("Space", 32),
    ("ArrowUp", 38),
    ("ArrowDown", 40),
    ("ArrowLeft", 37),
    ("ArrowRight", 39),
    ("Home", 36),
    ("End", 35),
    ("PageUp", 33),
    ("PageDown", 34),
];

/// What a step needs of its selector or value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    Required,
    Optional,
    Unused,
}

/// Whether `action` needs a selector, and a value.
fn needs(action: StepAction) -> (Need, Need) {
    use Need::*;
    use StepAction as A;
    match action {
        A::Goto => (Unused, Required),
        A::Click => (Required, Unused),
        A::Type => (Required, Required),
        A::Select => (Required, Required),
        A::Check => (Required, Unused),
        A::Uncheck => (Required, Unused),
        A::Press => (Optional, Required),
        A::WaitFor => (Required, Optional),
        A::WaitForText => (Optional, Required),
        A::Wait => (Unused, Required),
        A::Scroll => (Optional, Unused),
        A::Remove => (Required, Unused),
        A::Script => (Unused, Required),
    }
}

/// The API name of `action` (as serde writes it).
pub fn action_name(action: StepAction) -> &'static str {
    use StepAction as A;
    match action {
        A::Goto => "goto",
        A::Click => "click",
        A::Type => "type",
        A::Select => "select",
        A::Check => "check",
        A::Uncheck => "uncheck",
        A::Press => "press",
        A::WaitFor => "waitFor",
        A::WaitForText => "waitForText",
        A::Wait => "wait",
        A::Scroll => "scroll",
        A::Remove => "remove",
        A::Script => "script",
    }
}

/// Every action, for lists offered to people (the web form).
pub const ACTIONS: &[StepAction] = &[
    StepAction::Goto,
    StepAction::Click,
    StepAction::Type,
    StepAction::Select,
    StepAction::Check,
    StepAction::Uncheck,
    StepAction::Press,
    StepAction::WaitFor,
    StepAction::WaitForText,
    StepAction::Wait,
    StepAction::Scroll,
    StepAction::Remove,
    StepAction::Script,
];

/// A monitor's steps and login, validated: what a rendered check runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Steps {
    /// Run after the page loads, on every check.
    pub steps: Vec<Step>,
    /// Run when the browser must sign in.
    pub login: Vec<Step>,
    /// An element shown only when signed in.
    pub logged_in_when: Option<String>,
}

impl Steps {
    /// Whether a login is configured.
    pub fn has_login(&self) -> bool {
        !self.login.is_empty()
    }

    /// Whether a step holds a secret value.
    pub fn has_secrets(&self) -> bool {
        self.steps
            .iter()
            .chain(&self.login)
            .any(|s| s.secret && s.value.as_deref().is_some_and(|v| !v.is_empty()))
    }

    /// `message` with every secret value of the steps masked, so a page that echoes what was
    /// typed (or a URL holding it) never carries it into an error.
    pub fn scrub(&self, message: &str) -> String {
        let mut out = message.to_string();
        for step in self.steps.iter().chain(&self.login) {
            if let Some(value) = step
                .value
                .as_deref()
                .filter(|v| step.secret && !v.is_empty())
            {
                out = out.replace(value, "•••");
                // A form sent by GET puts it in the address, percent-encoded.
                let encoded: String =
                    url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
                out = out.replace(&encoded, "•••");
            }
        }
        out
    }
}

/// The steps and login of `monitor`, each problem added as (field, message); `None` when it
/// has neither.
pub(crate) fn compile(monitor: &Monitor, problems: &mut Vec<(String, String)>) -> Option<Steps> {
    let steps = monitor.steps.clone().unwrap_or_default();
    let login = monitor.login.clone().unwrap_or_default();
    if steps.is_empty() && monitor.login.is_none() {
        return None;
    }
    // A crawl signs in once, at its start page, and crawls with that session; steps on every
    // crawled page would be another thing.
    if monitor.job_type == crate::model::ClientJobType::Portal && !steps.is_empty() {
        problems.push((
            "steps".into(),
            "a Portal monitor runs no steps (its login, once, at the start page)".into(),
        ));
    }
    check_list("steps", &steps, problems);
    if monitor.login.is_some() {
        if login.steps.is_empty() {
            problems.push(("login.steps".into(), "must hold at least one step".into()));
        }
        check_list("login.steps", &login.steps, problems);
        if let Some(selector) = &login.logged_in_when
            && let Err(message) = check_selector(selector)
        {
            problems.push(("login.loggedInWhen".into(), message));
        }
    }
    Some(Steps {
        steps,
        login: login.steps,
        logged_in_when: login.logged_in_when.filter(|s| !s.trim().is_empty()),
    })
}

fn check_list(field: &str, steps: &[Step], problems: &mut Vec<(String, String)>) {
    if steps.len() > MAX_STEPS {
        problems.push((
            field.into(),
            format!("at most {MAX_STEPS} steps, not {}", steps.len()),
        ));
        return;
    }
    for (i, step) in steps.iter().enumerate() {
        let name = action_name(step.action);
        let (selector, value) = needs(step.action);
        let at = |what: &str| format!("{field}[{i}].{what}");
        match (selector, &step.selector) {
            (Need::Required, None) => {
                problems.push((at("selector"), format!("{name} needs a selector")))
            }
            (Need::Unused, Some(_)) => {
                problems.push((at("selector"), format!("{name} takes no selector")))
            }
            (_, Some(s)) => {
                if let Err(message) = check_selector(s) {
                    problems.push((at("selector"), message));
                }
            }
            (_, None) => {}
        }
        match (value, &step.value) {
            (Need::Required, None) if step.secret => problems.push((
                at("value"),
                "the secret is missing (exports leave secrets out): type it again".into(),
            )),
            (Need::Required, None) => problems.push((at("value"), format!("{name} needs a value"))),
            (Need::Unused, Some(_)) => {
                problems.push((at("value"), format!("{name} takes no value")))
            }
            (_, Some(v)) => {
                if let Err(message) = check_value(step.action, v) {
                    problems.push((at("value"), message));
                }
            }
            (_, None) => {}
        }
        if step.secret && value == Need::Unused {
            problems.push((at("secret"), format!("{name} has no value to keep secret")));
        }
    }
}

/// Checks a selector: XPath when it starts with `/` or `(` (compiled as the engine compiles
/// XPath; the browser evaluates it), else CSS, read far enough to refuse what cannot be a
/// selector (the browser reads it whole when the step runs).
pub fn check_selector(selector: &str) -> Result<(), String> {
    let s = selector.trim();
    if s.is_empty() {
        return Err("is empty".into());
    }
    if s.len() > MAX_SELECTOR_BYTES {
        return Err(format!(
            "must be at most {MAX_SELECTOR_BYTES} bytes, not {}",
            s.len()
        ));
    }
    if s.starts_with('/') || s.starts_with('(') {
        return crate::extract::xpath::XPath::compile(s)
            .map(|_| ())
            .map_err(|e| format!("is not a valid XPath: {e}"));
    }
    check_css(s).map_err(|why| format!("is neither XPath (starting with / or () nor CSS: {why}"))
}

/// A light reading of a CSS selector: brackets and quotes balanced, no character that no
/// selector holds outside quotes.
fn check_css(s: &str) -> Result<(), String> {
    let mut closers = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in s.chars() {
        if c.is_control() {
            return Err("it holds a control character".into());
        }
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '[' => closers.push(']'),
            '(' => closers.push(')'),
            ']' | ')' if closers.pop() != Some(c) => {
                return Err(format!("`{c}` closes nothing"));
            }
            '{' | '}' | ';' | '!' | '@' | '$' | '%' | '?' | '`' | '<' => {
                return Err(format!("`{c}` has no place in a selector"));
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return Err("a quote is not closed".into());
    }
    if let Some(c) = closers.pop() {
        return Err(format!("`{c}` is missing"));
    }
    Ok(())
}

/// Seconds in a `wait` or `waitFor` value, within `max`.
pub fn seconds(value: &str, max: Duration) -> Result<Duration, String> {
    let secs: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("must be a number of seconds, not {value:?}"))?;
    if !secs.is_finite() || secs <= 0.0 || secs > max.as_secs_f64() {
        return Err(format!(
            "must be more than 0 and at most {} seconds",
            max.as_secs()
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn check_value(action: StepAction, value: &str) -> Result<(), String> {
    use StepAction as A;
    let chars = value.chars().count();
    let at_most = |max: usize| {
        if chars > max {
            Err(format!("must be at most {max} characters, not {chars}"))
        } else {
            Ok(())
        }
    };
    match action {
        A::Goto => crate::validate::parse_url(value).map(|_| ()),
        A::Type | A::Script => at_most(MAX_VALUE_CHARS),
        A::Select | A::WaitForText => at_most(MAX_SELECTOR_BYTES),
        A::Press => key(value).map(|_| ()).ok_or_else(|| {
            let names: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
            format!("must be one character or a key among {}", names.join(", "))
        }),
        A::WaitFor => seconds(value, MAX_WAIT_FOR).map(|_| ()),
        A::Wait => seconds(value, MAX_WAIT).map(|_| ()),
        A::Click | A::Check | A::Uncheck | A::Scroll | A::Remove => Ok(()),
    }
}

/// A key to press: its DOM key name, Windows key code and the text it types.
pub fn key(value: &str) -> Option<(String, i64, Option<String>)> {
    if let Some((name, code)) = KEYS.iter().find(|(k, _)| *k == value) {
        let text = match *name {
            "Enter" => Some("\r".to_string()),
            "Space" => Some(" ".to_string()),
            _ => None,
        };
        let key = if *name == "Space" { " " } else { name };
        return Some((key.to_string(), *code, text));
    }
    let mut chars = value.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if !c.is_control() => {
            let code = i64::from(u32::from(c.to_ascii_uppercase()));
            Some((c.to_string(), code, Some(c.to_string())))
        }
        _ => None,
    }
}

/// How a step is named in an error: "click `#go`", "type into `#password`". A secret value
/// is never part of it.
pub fn describe(step: &Step) -> String {
    use StepAction as A;
    let selector = step.selector.as_deref().unwrap_or("");
    let value = if step.secret {
        "•••"
    } else {
        step.value.as_deref().unwrap_or("")
    };
    let short: String = value.chars().take(60).collect();
    match step.action {
        A::Goto => format!("go to {short}"),
        A::Click => format!("click `{selector}`"),
        A::Type => format!("type into `{selector}`"),
        A::Select => format!("select {short:?} in `{selector}`"),
        A::Check => format!("check `{selector}`"),
        A::Uncheck => format!("uncheck `{selector}`"),
        A::Press if selector.is_empty() => format!("press {short}"),
        A::Press => format!("press {short} in `{selector}`"),
        A::WaitFor => format!("wait for `{selector}`"),
        A::WaitForText => format!("wait for the text {short:?}"),
        A::Wait => format!("wait {short} s"),
        A::Scroll if selector.is_empty() => "scroll to the bottom".into(),
        A::Scroll => format!("scroll to `{selector}`"),
        A::Remove => format!("remove `{selector}`"),
        A::Script => "script".into(),
    }
}

/// How long `step` waits for its element.
pub fn element_wait(step: &Step) -> Duration {
    if step.optional {
        return OPTIONAL_WAIT;
    }
    match (step.action, &step.value) {
        (StepAction::WaitFor, Some(v)) => seconds(v, MAX_WAIT_FOR).unwrap_or(ELEMENT_WAIT),
        _ => ELEMENT_WAIT,
    }
}

/// What a step's script answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Done.
    Done,
    /// Its element (or text) did not appear in time.
    Missing,
    /// It failed, saying why.
    Failed(String),
}

impl Answer {
    /// Reads a step script's answer (`{ok}`, `{missing}` or `{fail: why}`).
    pub fn of(value: &serde_json::Value) -> Answer {
        if let Some(why) = value.get("fail").and_then(|v| v.as_str()) {
            return Answer::Failed(why.to_string());
        }
        if value.get("missing").is_some() {
            return Answer::Missing;
        }
        Answer::Done
    }
}

/// Finding elements and waiting for them, shared by the step scripts: `all(selector)` (XPath
/// when it starts with `/` or `(`, else CSS) and `wait(find)`, which polls `find` until it
/// gives something or the wait `T` (ms) ends; with `Q` (ms, an optional step's) above zero,
/// also once the page has loaded, has nothing pending and nothing in its document changed for
/// `Q` (the renderer's counts; without them only `T` ends the wait).
const PRELUDE: &str = r#"
  const all = (s) => {
    if (s[0] === '/' || s[0] === '(') {
      const r = document.evaluate(s, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
      const out = [];
      for (let i = 0; i < r.snapshotLength; i++) {
        const n = r.snapshotItem(i);
        if (n.nodeType === 1) out.push(n);
      }
      return out;
    }
    return Array.from(document.querySelectorAll(s));
  };
  const pause = (ms) => new Promise((r) => (window.__wachetSetTimeout || setTimeout)(r, ms));
  const wait = async (find) => {
    const begun = performance.now(), end = begun + T;
    let changed = begun, seen = null;
    if (Q > 0) {
      try {
        seen = new MutationObserver(() => { changed = performance.now(); });
        seen.observe(document, { childList: true, subtree: true, attributes: true, characterData: true });
      } catch (e) { seen = null; }
    }
    try {
      for (;;) {
        let found;
        try { found = find(); } catch (e) { return { fail: 'the selector is not valid here: ' + e.message }; }
        if (found) return { el: found };
        const now = performance.now();
        if (now >= end) return { missing: true };
        if (seen && document.readyState === 'complete' && window.__wachetBusy && window.__wachetBusy() === 0
            && now - Math.max(changed, window.__wachetLastEnd ? window.__wachetLastEnd() : 0) >= Q)
          return { missing: true };
        await pause(100);
      }
    } finally { if (seen) seen.disconnect(); }
  };
  const first = () => wait(() => all(S)[0]);
  const fire = (el) => {
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  };
"#;

/// The script of `step` (an expression evaluated with `awaitPromise`), answering `{ok}`,
/// `{missing}` or `{fail}`. `wait` and `script` run outside it (see the renderer): `None`.
pub fn script(step: &Step) -> Option<String> {
    use StepAction as A;
    let body = match step.action {
        A::Wait | A::Script => return None,
        A::Goto => "location.href = V; return { ok: true };",
        A::Click => {
            "const f = await first(); if (!f.el) return f;
             f.el.scrollIntoView({ block: 'center' }); f.el.click(); return { ok: true };"
        }
        A::Type => {
            "const f = await first(); if (!f.el) return f; const el = f.el;
             const tag = el.tagName;
             if (!(tag === 'INPUT' || tag === 'TEXTAREA' || el.isContentEditable))
               return { fail: 'the element is not a field' };
             el.focus();
             if (el.isContentEditable) el.textContent = V;
             else {
               const proto = tag === 'INPUT' ? HTMLInputElement.prototype : HTMLTextAreaElement.prototype;
               Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, V);
             }
             fire(el); return { ok: true };"
        }
        A::Select => {
            "const f = await first(); if (!f.el) return f; const el = f.el;
             if (el.tagName !== 'SELECT') return { fail: 'the element is not a list of options (select)' };
             const opts = Array.from(el.options);
             const o = opts.find((o) => o.value === V)
               || opts.find((o) => o.label.trim() === V.trim() || o.text.trim() === V.trim());
             if (!o) return { fail: 'the list has no such option' };
             el.value = o.value; fire(el); return { ok: true };"
        }
        A::Check | A::Uncheck => {
            "const f = await first(); if (!f.el) return f; const el = f.el;
             if (!(el.tagName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')))
               return { fail: 'the element is not a checkbox or radio button' };
             if (el.checked !== WANT) el.click(); return { ok: true };"
        }
        A::Press => {
            "if (S === null) return { ok: true };
             const f = await first(); if (!f.el) return f; f.el.focus(); return { ok: true };"
        }
        A::WaitFor => "return (await first()).el ? { ok: true } : { missing: true };",
        A::WaitForText => {
            "const f = await wait(() => {
               const root = S === null ? document.body : all(S)[0];
               return root && (root.innerText || root.textContent || '').includes(V);
             });
             return f.el ? { ok: true } : f;"
        }
        A::Scroll => {
            "if (S === null) { window.scrollTo(0, document.documentElement.scrollHeight); return { ok: true }; }
             const f = await first(); if (!f.el) return f;
             f.el.scrollIntoView({ block: 'start' }); return { ok: true };"
        }
        A::Remove => {
            "const f = await first(); if (!f.el) return f;
             for (const el of all(S)) el.remove(); return { ok: true };"
        }
    };
    let json = |v: Option<&str>| serde_json::to_string(&v).unwrap_or_else(|_| "null".into());
    Some(format!(
        "(async () => {{ const S = {}, V = {}, T = {}, Q = {}, WANT = {};{PRELUDE}{body} }})()",
        json(step.selector.as_deref().map(str::trim)),
        json(step.value.as_deref()),
        element_wait(step).as_millis(),
        match step.optional {
            true => OPTIONAL_QUIET.as_millis(),
            false => 0,
        },
        step.action == StepAction::Check,
    ))
}

/// The script telling whether `selector` matches now (`true`/`false`), for `loggedInWhen`,
/// waiting up to `wait`.
pub fn present(selector: &str, wait: Duration) -> String {
    let json = serde_json::to_string(selector.trim()).unwrap_or_else(|_| "null".into());
    format!(
        "(async () => {{ const S = {json}, V = null, T = {}, Q = 0, WANT = false;{PRELUDE}
          const f = await first(); return !!f.el; }})()",
        wait.as_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Login;

    fn problems(monitor: &Monitor) -> Vec<(String, String)> {
        let mut found = Vec::new();
        compile(monitor, &mut found);
        found
    }

    #[test]
    fn bad_steps_are_named_by_field() {
        let mut m = Monitor::new("https://example.com/");
        m.steps = Some(vec![
            Step::new(StepAction::Click).on("button[id='go'"),
            Step::new(StepAction::Click).on("!!!"),
            Step::new(StepAction::Type).on("//input[").with("x"),
            Step::new(StepAction::Type)
                .on("#q")
                .with("a".repeat(MAX_VALUE_CHARS + 1)),
            Step::new(StepAction::Wait).with("3600"),
            Step::new(StepAction::Goto).with("file:///etc/passwd"),
            Step::new(StepAction::Press).with("Hyper"),
            Step::new(StepAction::Click),
        ]);
        m.login = Some(Login {
            steps: vec![],
            logged_in_when: Some("{".into()),
        });
        let found: Vec<String> = problems(&m).into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            found,
            [
                "steps[0].selector",
                "steps[1].selector",
                "steps[2].selector",
                "steps[3].value",
                "steps[4].value",
                "steps[5].value",
                "steps[6].value",
                "steps[7].selector",
                "login.steps",
                "login.loggedInWhen",
            ]
        );
        m.steps = Some(vec![Step::new(StepAction::Scroll); MAX_STEPS + 1]);
        m.login = None;
        let found = problems(&m);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, "at most 50 steps, not 51");
    }

    #[test]
    fn good_steps_pass_and_secrets_are_scrubbed() {
        let mut m = Monitor::new("https://example.com/");
        m.steps = Some(vec![
            Step::new(StepAction::Click).on("//button[@id='go']"),
            Step::new(StepAction::Click).on("div.banner > button:not([disabled])"),
            Step::new(StepAction::Wait).with("0.5"),
            Step::new(StepAction::Press).with("Enter"),
            Step::new(StepAction::Scroll),
        ]);
        let mut password = Step::new(StepAction::Type).on("#password").with("hunter 2");
        password.secret = true;
        m.login = Some(Login {
            steps: vec![password.clone()],
            logged_in_when: Some("#account".into()),
        });
        assert_eq!(problems(&m), []);
        let mut found = Vec::new();
        let steps = compile(&m, &mut found).unwrap();
        assert_eq!(
            steps.scrub("at /x?p=hunter+2 it said hunter 2"),
            "at /x?p=••• it said •••"
        );
        assert_eq!(describe(&password), "type into `#password`");
    }
}
