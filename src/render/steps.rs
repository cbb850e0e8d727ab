//! Running a monitor's browser steps in a tab ([`crate::steps`] says what each does): after
//! the page loads, sign in when needed (restoring the kept session first, and keeping it
//! after), then run the steps one by one, each followed by the wait for the navigation it
//! started and for the page to settle. A failure names the step and the page it was on
//! ([`StepFailure`]); the value is taken from the page the last step left.

use super::RenderSettings;
use super::pending::{LongPolls, Waits};
use super::scripts;
use super::tab::{COMMAND_TIMEOUT, Tab, TabError, ms};
use crate::fetch::{FetchError, FetchRequest, NetworkPolicy};
use crate::model::{Step, StepAction};
use crate::steps::session::{OriginStorage, SavedCookie};
use crate::steps::{self, Answer, SavedSession, SessionStore, Steps};
use chromiumoxide::cdp::browser_protocol::input::{DispatchKeyEventParams, DispatchKeyEventType};
use chromiumoxide::cdp::browser_protocol::network::{
    CookieParam, GetCookiesParams, SetCookiesParams,
};
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, RemoveScriptToEvaluateOnNewDocumentParams,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A monitor's steps as a render session runs them, with the store of its session and what
/// the check tells its caller (whether it had to sign in).
#[derive(Clone)]
pub struct StepRun {
    pub(crate) steps: Arc<Steps>,
    pub(crate) sessions: Option<Arc<dyn SessionStore>>,
    /// What a `goto` may reach: the engine's policy, judged before the browser is sent there
    /// so a refusal is said as the step's failure.
    policy: Arc<NetworkPolicy>,
    /// Set when the check ran its login steps.
    pub(crate) logged_in: Arc<AtomicBool>,
    /// Set when a kept session was restored before the page loaded.
    restored: Arc<AtomicBool>,
    /// Set once the steps ran in the session: a crawl signs in at its start page only, and
    /// its later pages load with that session.
    done: Arc<AtomicBool>,
}

impl std::fmt::Debug for StepRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepRun")
            .field("steps", &self.steps.steps.len())
            .field("login", &self.steps.login.len())
            .finish_non_exhaustive()
    }
}

impl StepRun {
    pub(crate) fn new(
        steps: Arc<Steps>,
        sessions: Option<Arc<dyn SessionStore>>,
        policy: Arc<NetworkPolicy>,
    ) -> Self {
        StepRun {
            steps,
            sessions,
            policy,
            logged_in: Arc::new(AtomicBool::new(false)),
            restored: Arc::new(AtomicBool::new(false)),
            done: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether the steps already ran in this render session (a crawl's start page).
    pub(crate) fn done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Whether the check ran its login steps.
    pub fn logged_in(&self) -> bool {
        self.logged_in.load(Ordering::Acquire)
    }
}

/// A step that failed: which (`head`, "step 3 of 5 (click `#go`)"), why, and where the page
/// was (", on URL titled "..."").
#[derive(Debug)]
pub(crate) struct StepFailure {
    pub head: String,
    pub reason: String,
    pub at: String,
    /// The step's navigation failed: a refusal of the egress proxy says more than the reason.
    pub navigation: bool,
    /// The tab may be wedged (a script that never ends).
    pub discard: bool,
}

impl StepFailure {
    /// The message, its secrets masked.
    pub fn message(&self, steps: &Steps, refused: Option<FetchError>) -> String {
        let reason = match refused.filter(|_| self.navigation) {
            Some(refused) => refused.to_string(),
            None => self.reason.clone(),
        };
        steps.scrub(&format!("{}: {reason}{}", self.head, self.at))
    }
}

/// What a list of steps runs with.
#[derive(Clone, Copy)]
pub(super) struct Pace<'a> {
    pub(super) run: &'a StepRun,
    pub(super) settings: &'a RenderSettings,
    pub(super) long_polls: &'a LongPolls,
    /// When every step must have ended.
    pub(super) budget: Instant,
}

/// How long a step is given to start the navigation it causes.
const NAVIGATION_START: Duration = Duration::from_millis(150);

/// Why one step did not run, before it is named.
enum Failed {
    Missing(Duration),
    Reason {
        reason: String,
        navigation: bool,
        discard: bool,
    },
    Tab(TabError),
}

impl From<TabError> for Failed {
    fn from(e: TabError) -> Self {
        Failed::Tab(e)
    }
}

fn reason(reason: impl Into<String>) -> Failed {
    Failed::Reason {
        reason: reason.into(),
        navigation: false,
        discard: false,
    }
}

impl Tab {
    /// Gives the browser the kept session (its cookies now, its local storage as the page's
    /// origin loads), when the monitor has a login and its store keeps one.
    pub(super) async fn restore_session(&mut self, run: &StepRun) -> Result<(), TabError> {
        run.restored.store(false, Ordering::Release);
        let Some(store) = run.sessions.as_ref().filter(|_| run.steps.has_login()) else {
            return Ok(());
        };
        let now = chrono::Utc::now().timestamp() as f64;
        let kept = match store.load().await {
            Ok(kept) => kept.and_then(|s| s.live_at(now)),
            Err(e) => {
                tracing::warn!(target: "wachet::render", error = %e, "the kept session is not used");
                None
            }
        };
        let Some(kept) = kept else { return Ok(()) };
        let cookies: Vec<CookieParam> = kept
            .cookies
            .iter()
            .filter_map(|c| {
                let mut json = serde_json::json!({
                    "name": c.name, "value": c.value, "domain": c.domain, "path": c.path,
                    "secure": c.secure, "httpOnly": c.http_only,
                });
                if let Some(expires) = c.expires {
                    json["expires"] = expires.into();
                }
                if let Some(same_site) = &c.same_site {
                    json["sameSite"] = same_site.clone().into();
                }
                serde_json::from_value(json).ok()
            })
            .collect();
        if !cookies.is_empty() {
            self.command("restoring cookies", SetCookiesParams::new(cookies))
                .await?;
        }
        for origin in &kept.storage {
            let script = restore_storage(origin);
            let added = self
                .command(
                    "restoring local storage",
                    AddScriptToEvaluateOnNewDocumentParams::new(script),
                )
                .await?;
            self.storage_scripts.push(added.identifier.clone());
        }
        run.restored.store(true, Ordering::Release);
        Ok(())
    }

    /// Signs in when needed, then runs the monitor's steps; the page is left as the last step
    /// left it, settled.
    pub(super) async fn run_steps(
        &mut self,
        request: &FetchRequest,
        settings: &RenderSettings,
        long_polls: &LongPolls,
        waits: &mut Waits,
        run: &StepRun,
    ) -> Result<(), TabError> {
        for id in std::mem::take(&mut self.storage_scripts) {
            let remove = RemoveScriptToEvaluateOnNewDocumentParams::new(id);
            self.command("removing a script", remove).await?;
        }
        let budget = Instant::now() + steps::STEPS_BUDGET;
        let plan = &run.steps;
        if plan.has_login() {
            let restored = run.restored.load(Ordering::Acquire);
            let signed_in = match (&plan.logged_in_when, restored) {
                (Some(selector), true) => self.present(selector, steps::SIGNED_IN_WAIT).await?,
                _ => false,
            };
            if !signed_in {
                if restored && let Some(store) = &run.sessions {
                    let _ = store.clear().await;
                }
                let pace = Pace {
                    run,
                    settings,
                    long_polls,
                    budget,
                };
                self.run_list("login step", &plan.login, &pace, waits)
                    .await?;
                run.logged_in.store(true, Ordering::Release);
                // A sign-in answered with a challenge (a captcha) is a wall like any: the page
                // is taken as it is, and its analysis says the check was blocked.
                if self.walled(settings).await? {
                    return Ok(());
                }
                // Back to the monitor's page, now signed in.
                self.navigate(request, settings).await?;
                self.settle(settings, long_polls, waits).await?;
                if let Some(selector) = &plan.logged_in_when
                    && !self.present(selector, steps::SIGNED_IN_WAIT).await?
                {
                    let at = self.whereabouts().await;
                    return Err(TabError::Step(StepFailure {
                        head: "login".into(),
                        reason: format!(
                            "the login steps ran, but the page does not show `{selector}` \
                             (loggedInWhen) within {} s: the sign-in did not work",
                            steps::SIGNED_IN_WAIT.as_secs()
                        ),
                        at,
                        navigation: false,
                        discard: false,
                    }));
                }
            }
        }
        let pace = Pace {
            run,
            settings,
            long_polls,
            budget,
        };
        self.run_list("step", &plan.steps, &pace, waits).await?;
        if plan.has_login()
            && let Some(store) = &run.sessions
        {
            let session = self.session(request, plan).await?;
            if let Err(e) = store.save(&session).await {
                return Err(TabError::Page {
                    error: FetchError::Render(format!("signed in, but {e}")),
                    discard: false,
                });
            }
        }
        run.done.store(true, Ordering::Release);
        Ok(())
    }

    /// Runs `list` in order; `kind` names its steps in errors ("step", "login step").
    pub(super) async fn run_list(
        &mut self,
        kind: &str,
        list: &[Step],
        pace: &Pace<'_>,
        waits: &mut Waits,
    ) -> Result<(), TabError> {
        let Pace {
            run,
            settings,
            long_polls,
            budget,
        } = *pace;
        for (i, step) in list.iter().enumerate() {
            let head = format!(
                "{kind} {} of {} ({})",
                i + 1,
                list.len(),
                steps::describe(step)
            );
            let outcome = if Instant::now() >= budget {
                Err(reason(format!(
                    "the steps took longer than {} s in all",
                    steps::STEPS_BUDGET.as_secs()
                )))
            } else {
                self.run_one(step, &run.policy, settings, long_polls, waits)
                    .await
            };
            let (reason, navigation, discard) = match outcome {
                Ok(()) => continue,
                Err(Failed::Missing(_)) if step.optional => {
                    tracing::debug!(target: "wachet::render", step = %head, "optional step skipped");
                    continue;
                }
                Err(Failed::Missing(waited)) => {
                    let what = match step.action {
                        StepAction::WaitForText => "the text did not appear",
                        _ => "no element matched",
                    };
                    (
                        format!("{what} within {} s", waited.as_secs()),
                        false,
                        false,
                    )
                }
                Err(Failed::Reason {
                    reason,
                    navigation,
                    discard,
                }) => (reason, navigation, discard),
                Err(Failed::Tab(TabError::Page { error, discard })) => {
                    (error.to_string(), false, discard)
                }
                Err(Failed::Tab(other)) => return Err(other),
            };
            let at = if discard {
                String::new()
            } else {
                self.whereabouts().await
            };
            return Err(TabError::Step(StepFailure {
                head,
                reason,
                at,
                navigation,
                discard,
            }));
        }
        Ok(())
    }

    /// Runs one step, then waits for what it started.
    async fn run_one(
        &mut self,
        step: &Step,
        policy: &NetworkPolicy,
        settings: &RenderSettings,
        long_polls: &LongPolls,
        waits: &mut Waits,
    ) -> Result<(), Failed> {
        if step.action == StepAction::Goto
            && let Some(refused) = screen(policy, step.value.as_deref().unwrap_or("")).await
        {
            return Err(reason(refused));
        }
        let mut started = self.loading_starts();
        let mut committed = self.commits();
        let value = step.value.as_deref().unwrap_or("");
        match step.action {
            StepAction::Wait => {
                let wait = steps::seconds(value, steps::MAX_WAIT).unwrap_or(steps::MAX_WAIT);
                tokio::time::sleep(wait).await;
            }
            StepAction::Script => {
                let limit = steps::SCRIPT_TIME;
                match self.eval_within(value, limit).await {
                    Ok(_) => {}
                    Err(TabError::Page { error, discard }) => {
                        let said = error.to_string();
                        let reason = if said.starts_with("timed out") {
                            format!("the script did not finish within {} s", limit.as_secs())
                        } else {
                            said.replace("the page's script failed", "the script failed")
                        };
                        return Err(Failed::Reason {
                            reason,
                            navigation: false,
                            discard,
                        });
                    }
                    Err(other) => return Err(Failed::Tab(other)),
                }
            }
            _ => {
                if let Some(script) = steps::script(step) {
                    let limit = steps::element_wait(step) + COMMAND_TIMEOUT;
                    match Answer::of(&self.eval_within(&script, limit).await?) {
                        Answer::Done => {}
                        Answer::Missing => return Err(Failed::Missing(steps::element_wait(step))),
                        Answer::Failed(why) => return Err(reason(why)),
                    }
                }
                if step.action == StepAction::Press {
                    self.press(value).await?;
                }
            }
        }
        // A step that starts a navigation does so at once (a click on a submit button, a
        // `goto`): a short wait for its start tells a navigation from a change in place. One
        // that starts later breaks the settle's evaluation, and is waited for then.
        let mut navigating = tokio::time::timeout(NAVIGATION_START, started.changed())
            .await
            .is_ok();
        if !navigating {
            match self.settle(settings, long_polls, waits).await {
                Ok(()) => return Ok(()),
                Err(TabError::Page { .. }) if started.has_changed().unwrap_or(false) => {
                    navigating = true;
                }
                Err(e) => return Err(e.into()),
            }
        }
        if navigating {
            let limit = settings.navigation_timeout;
            let began = Instant::now();
            match tokio::time::timeout(limit, committed.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    return Err(Failed::Reason {
                        reason: format!(
                            "the page it led to did not load within {} s",
                            limit.as_secs()
                        ),
                        navigation: true,
                        discard: true,
                    });
                }
            }
            let url = committed.borrow().clone().unwrap_or_default();
            if url.starts_with("chrome-error:") {
                return Err(Failed::Reason {
                    reason: "the page it led to could not be loaded".into(),
                    navigation: true,
                    discard: false,
                });
            }
            let left = limit.saturating_sub(began.elapsed());
            self.eval_within(scripts::PARSED, left).await?;
        }
        self.settle(settings, long_polls, waits).await?;
        Ok(())
    }

    /// Waits for the page to settle, the requests it makes included.
    pub(super) async fn settle(
        &self,
        settings: &RenderSettings,
        long_polls: &LongPolls,
        waits: &mut Waits,
    ) -> Result<(), TabError> {
        let quiet = ms(settings.quiet);
        let idle_quiet = ms(settings.idle_quiet.min(settings.quiet));
        self.eval(
            &scripts::settle(quiet, idle_quiet, ms(settings.max_settle)),
            settings,
        )
        .await?;
        let deadline = Instant::now() + settings.max_settle;
        self.settle_after_requests(long_polls, waits, deadline, quiet, settings)
            .await?;
        Ok(())
    }

    /// Whether the page now shown is a wall (a bot challenge, a captcha, access denied).
    async fn walled(&self, settings: &RenderSettings) -> Result<bool, TabError> {
        let serialized = self
            .eval(&scripts::serialize(settings.max_html_bytes), settings)
            .await?;
        let html = serialized
            .get("html")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let headers = http::HeaderMap::new();
        let verdict = crate::classify::classify(&crate::classify::Response {
            status: self.status(),
            headers: &headers,
            content_type: Some("text/html"),
            text: html,
            body_len: html.len(),
            rendered: true,
            bodiless: false,
        });
        Ok(matches!(verdict, crate::classify::Verdict::Blocked(_)))
    }

    /// Whether `selector` matches, waiting up to `wait`.
    async fn present(&self, selector: &str, wait: Duration) -> Result<bool, TabError> {
        let found = self
            .eval_within(&steps::present(selector, wait), wait + COMMAND_TIMEOUT)
            .await?;
        Ok(found.as_bool().unwrap_or(false))
    }

    /// Presses `key` in the focused element, as a person's keyboard does (an Enter in a field
    /// sends its form).
    async fn press(&self, key: &str) -> Result<(), TabError> {
        let Some((name, code, text)) = steps::key(key) else {
            return Ok(());
        };
        for kind in [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp] {
            let mut event = DispatchKeyEventParams::new(kind.clone());
            event.key = Some(name.clone());
            event.windows_virtual_key_code = Some(code);
            if kind == DispatchKeyEventType::KeyDown {
                event.text = text.clone();
            }
            self.command("pressing a key", event).await?;
        }
        Ok(())
    }

    /// ", on URL titled "title"", for an error; empty when the page does not answer.
    async fn whereabouts(&self) -> String {
        let answer = self
            .eval_within("[location.href, document.title]", COMMAND_TIMEOUT)
            .await;
        let Ok(serde_json::Value::Array(parts)) = answer else {
            return String::new();
        };
        let url = parts.first().and_then(|v| v.as_str()).unwrap_or("");
        let title: String = parts
            .get(1)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .chars()
            .take(120)
            .collect();
        format!(", on {url} titled {:?}", title.trim())
    }

    /// The browser's session now: the cookies of the monitor's site and of every page the
    /// steps opened, and the local storage of the page's origin.
    async fn session(
        &self,
        request: &FetchRequest,
        plan: &Steps,
    ) -> Result<SavedSession, TabError> {
        let here = self
            .eval_within(
                "[location.href, location.origin, (() => { try { return Object.entries(localStorage); } catch (e) { return []; } })()]",
                COMMAND_TIMEOUT,
            )
            .await?;
        let mut urls = vec![request.url.to_string()];
        if let Some(url) = here.get(0).and_then(|v| v.as_str()) {
            urls.push(url.to_string());
        }
        for step in plan.login.iter().chain(&plan.steps) {
            if step.action == StepAction::Goto
                && let Some(url) = &step.value
            {
                urls.push(url.clone());
            }
        }
        let ask = GetCookiesParams { urls: Some(urls) };
        let cookies = self
            .command("reading cookies", ask)
            .await?
            .cookies
            .iter()
            .map(|c| SavedCookie {
                name: c.name.clone(),
                value: c.value.clone(),
                domain: c.domain.clone(),
                path: c.path.clone(),
                expires: (!c.session).then_some(c.expires),
                http_only: c.http_only,
                secure: c.secure,
                same_site: c.same_site.as_ref().map(|s| s.as_ref().to_string()),
            })
            .collect();
        let origin = here.get(1).and_then(|v| v.as_str()).unwrap_or("null");
        let items: Vec<(String, String)> = here
            .get(2)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let storage = if origin == "null" || items.is_empty() {
            Vec::new()
        } else {
            vec![OriginStorage {
                origin: origin.to_string(),
                items,
            }]
        };
        Ok(SavedSession { cookies, storage })
    }
}

/// Why the network policy refuses `url`, if it does (its host resolved as the egress proxy
/// will resolve it).
async fn screen(policy: &NetworkPolicy, url: &str) -> Option<String> {
    let url = url::Url::parse(url.trim()).ok()?;
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    if let Err(outside) = policy.check_origin(host, port) {
        return Some(outside.to_string());
    }
    match policy.screen(host, port).await {
        Ok((allowed, Some(refused))) if allowed.is_empty() => Some(refused.to_string()),
        _ => None,
    }
}

/// A script setting the kept local storage of `origin` as a page of that origin loads (keys
/// the page has already are left alone).
fn restore_storage(origin: &OriginStorage) -> String {
    fn json<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap_or_else(|_| "null".into())
    }
    format!(
        "(() => {{ const O = {}, I = {}; if (location.origin !== O) return;
           try {{ for (const [k, v] of I) if (localStorage.getItem(k) === null) localStorage.setItem(k, v); }} catch (e) {{}} }})()",
        json(&origin.origin),
        json(&origin.items),
    )
}
